package direct

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/pushd/pushd/push"
)

// ProtocolVersion is the version of our wire protocol (docs/own-channel.md); a device names
// the version it speaks in the v query parameter of /1.1/connect.
const ProtocolVersion = 1

// Frame ops.
const (
	OpPush  = "push"
	OpAck   = "ack"
	OpPing  = "ping"
	OpPong  = "pong"
	OpMoved = "moved"
	OpHello = "hello"
)

// maxAckIDs bounds the ids of one ack frame.
const maxAckIDs = 1000

// Frame is a decoded device frame.
type Frame struct {
	Op  string   `json:"op"`
	IDs []string `json:"ids,omitempty"`
}

// Errors of DecodeFrame: each closes the connection with CloseBadFrame and the error's text.
var (
	ErrBadJSON   = errors.New("frame is not a JSON object")
	ErrUnknownOp = errors.New("unknown op")
	ErrBadAck    = errors.New("ack needs 1 to 1000 non-empty ids")
)

// DecodeFrame reads one device frame (a text frame's payload). Unknown fields are ignored, so
// a newer device may add some; an unknown op is an error.
func DecodeFrame(b []byte) (Frame, error) {
	var f Frame
	if err := json.Unmarshal(b, &f); err != nil {
		return Frame{}, ErrBadJSON
	}
	switch f.Op {
	case OpPing, OpPong:
		return f, nil
	case OpAck:
		if len(f.IDs) == 0 || len(f.IDs) > maxAckIDs {
			return Frame{}, ErrBadAck
		}
		for _, id := range f.IDs {
			if id == "" {
				return Frame{}, ErrBadAck
			}
		}
		return f, nil
	}
	return Frame{}, ErrUnknownOp
}

// framePong answers a device's ping.
var framePong = []byte(`{"op":"pong"}`)

// frameMoved precedes the close of a device whose partition another node serves: without a
// server, it asks the router again (docs/own-channel.md, "moved").
var frameMoved = []byte(`{"op":"moved"}`)

// AppendPush appends the push frame of m to dst.
func AppendPush(dst []byte, m *push.DirectMessage) []byte {
	dst = append(dst, `{"op":"push","id":`...)
	dst = appendJSONString(dst, m.ID)
	dst = append(dst, `,"nid":`...)
	dst = appendJSONString(dst, m.NotificationID)
	dst = append(dst, `,"data":`...)
	if len(m.Data) == 0 {
		dst = append(dst, "{}"...)
	} else {
		dst = append(dst, m.Data...)
	}
	if m.Expires != 0 {
		dst = append(dst, `,"exp":`...)
		dst = strconv.AppendInt(dst, m.Expires, 10)
	}
	return append(dst, '}')
}

// helloFrame tells a device the protocol version, its heartbeat period and how many cached
// messages follow at once.
func helloFrame(heartbeat time.Duration, cached int) []byte {
	b := []byte(`{"op":"hello","v":`)
	b = strconv.AppendInt(b, ProtocolVersion, 10)
	b = append(b, `,"heartbeat":`...)
	b = strconv.AppendFloat(b, heartbeat.Seconds(), 'f', -1, 64)
	b = append(b, `,"offline":`...)
	b = strconv.AppendInt(b, int64(cached), 10)
	return append(b, '}')
}

func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
}
