package direct

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"

	"github.com/gobwas/ws"
	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/direct/lcproto"
	"github.com/pushd/pushd/store"
)

// The original service's protocol (docs/own-channel.md, section 9): the sub-protocols its
// Android SDK offers (StandardWebSocketClient.java). The server selects the one offered.
const (
	SubProtocolLC21 = "lc.protobuf2.1"
	SubProtocolLC23 = "lc.protobuf2.3"
)

// LCErrUnsupported is the error code (never a close code) answering a command of the
// original's protocol that is not push's (IM, LiveQuery): the connection stays open.
const LCErrUnsupported = 4005

// lcServicePush is GenericCommand.service for push (LiveQueryLoginPacket.SERVICE_PUSH).
const lcServicePush = 0

// Errors of DecodeLC: each closes the connection with CloseBadFrame.
var (
	ErrLCNotProto = errors.New("frame is not a GenericCommand")
	ErrLCNoCmd    = errors.New("command without cmd")
	ErrLCBadAck   = errors.New("ack with more than 1000 ids")
)

// DecodeLC reads one device frame of the original's protocol (a binary frame's payload).
// Unknown fields are kept, not refused: the SDK sends fields push does not read.
func DecodeLC(b []byte) (*lcproto.GenericCommand, error) {
	var c lcproto.GenericCommand
	if err := proto.Unmarshal(b, &c); err != nil {
		return nil, ErrLCNotProto
	}
	if c.Cmd == nil {
		return nil, ErrLCNoCmd
	}
	if c.GetCmd() == lcproto.CommandType_ack && len(c.GetAckMessage().GetIds()) > maxAckIDs {
		return nil, ErrLCBadAck
	}
	return &c, nil
}

// AppendLCData appends the data command of m to dst: one message, its id and its rendered
// Android payload (the same JSON our protocol's push frame holds) with the push's
// notification id as its first member "_nid" (render.KeyNID: the original's DataCommand has
// no field for it; a custom attribute of that name wins), offline when it comes from the
// offline cache at login. Written with protowire (no message built per delivery);
// TestDirectLCAppendDataIsTheMessage holds it to lcproto's GenericCommand.
func AppendLCData(dst []byte, m *push.DirectMessage, offline bool) []byte {
	data := m.Data
	if len(data) == 0 {
		data = []byte("{}")
	}
	// The JSON text is head + data[1:]: head opens the object with the _nid member.
	var hb [64]byte
	head := data[:1]
	if m.NotificationID != "" && data[0] == '{' && !bytes.Contains(data, lcNIDKey) {
		head = append(append(hb[:0], '{'), lcNIDKey...)
		head = appendJSONString(head, m.NotificationID)
		if rest := bytes.TrimLeft(data[1:], " \t\r\n"); len(rest) > 0 && rest[0] != '}' {
			head = append(head, ',')
		}
	}
	body := data[1:]
	jsonMsg := protowire.SizeTag(1) + protowire.SizeBytes(len(head)+len(body))
	inner := protowire.SizeTag(1) + protowire.SizeBytes(len(m.ID)) + protowire.SizeTag(2) + protowire.SizeBytes(jsonMsg)
	if offline {
		inner += protowire.SizeTag(3) + protowire.SizeVarint(1)
	}
	dst = protowire.AppendTag(dst, 1, protowire.VarintType) // cmd
	dst = protowire.AppendVarint(dst, uint64(lcproto.CommandType_data))
	dst = protowire.AppendTag(dst, 101, protowire.BytesType) // dataMessage
	dst = protowire.AppendVarint(dst, uint64(inner))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType) // ids
	dst = protowire.AppendString(dst, m.ID)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType) // msg
	dst = protowire.AppendVarint(dst, uint64(jsonMsg))
	dst = protowire.AppendTag(dst, 1, protowire.BytesType) // JsonObjectMessage.data
	dst = protowire.AppendVarint(dst, uint64(len(head)+len(body)))
	dst = append(append(dst, head...), body...)
	if offline {
		dst = protowire.AppendTag(dst, 3, protowire.VarintType) // offline
		dst = protowire.AppendVarint(dst, 1)
	}
	return dst
}

// lcNIDKey opens the "_nid" member (render.KeyNID) of a data command's JSON.
var lcNIDKey = []byte(`"` + render.KeyNID + `":`)

// lcError is the error command answering request i (nil: none) with code and reason.
func lcError(i *int32, code int, reason string) []byte {
	c := &lcproto.GenericCommand{
		Cmd:          lcproto.CommandType_error.Enum(),
		I:            i,
		ErrorMessage: &lcproto.ErrorCommand{Code: proto.Int32(int32(code)), Reason: proto.String(reason)},
	}
	b, err := proto.Marshal(c)
	if err != nil {
		panic("BUG: cannot marshal an error command: " + err.Error())
	}
	return b
}

// lcLoggedIn answers an accepted login: loggedin for the push service, without
// loggedinMessage (so pushDisabled is not set and the SDK keeps its connection).
var lcLoggedIn = func() []byte {
	b, err := proto.Marshal(&lcproto.GenericCommand{Cmd: lcproto.CommandType_loggedin.Enum(), Service: proto.Int32(lcServicePush)})
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return b
}()

// lcGoaway tells a device of the original's protocol to ask the router again (a moved
// installation).
var lcGoaway = func() []byte {
	b, err := proto.Marshal(&lcproto.GenericCommand{Cmd: lcproto.CommandType_goaway.Enum()})
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return b
}()

// serveLC serves the original's protocol on an upgraded connection: the first command must be
// a login of an existing Android installation without vendor of the app; then the device
// is attached to the core like one of ours. It returns its reader (nil: refused).
func (s *Server) serveLC(ctx context.Context, conn net.Conn) *reader {
	sess := &lcSession{frameWriter: frameWriter{conn: conn, timeout: s.cfg.WriteTimeout}}
	var login *lcproto.GenericCommand
	for login == nil { // the handshake's deadline still bounds this
		op, payload, code, reason := s.readClientFrame(conn)
		if code != 0 || op == 0 || op == ws.OpClose { // op 0: the connection is gone
			s.connects["bad_request"].Inc()
			sess.Close(code, reason)
			return nil
		}
		switch op {
		case ws.OpPing:
			if sess.writeFrame(ws.NewPongFrame(payload)) != nil {
				return nil
			}
			continue
		case ws.OpPong:
			continue
		}
		c, code, reason := s.decodeLCFrame(op, payload)
		if code == 0 && (c.GetCmd() != lcproto.CommandType_login || c.GetService() != lcServicePush) {
			code, reason = CloseBadFrame, "the first command must be a push login"
		}
		if code != 0 {
			s.connects["bad_request"].Inc()
			sess.Close(code, reason)
			return nil
		}
		login = c
	}
	appID, iid := login.GetAppId(), login.GetInstallationId()
	code, reason, result := s.admitLC(ctx, appID, iid)
	s.connects[result].Inc()
	if code != 0 {
		sess.Close(code, reason)
		return nil
	}
	err := s.core.Attach(ctx, appID, iid, sess, func(cached int) error {
		sess.mu.Lock()
		sess.offline = cached
		sess.mu.Unlock()
		return sess.write(lcLoggedIn)
	})
	if errors.Is(err, ErrMoved) {
		sess.Close(CloseMoved, movedReason)
		return nil
	}
	if err != nil {
		s.log.Warn("cannot attach a device", zap.String("app_id", appID), zap.Error(err))
		sess.Close(CloseInternal, "cannot flush the offline cache")
		return nil
	}
	idle := "no frame for " + s.cfg.LCIdle.String()
	return &reader{
		conn: conn, w: &sess.frameWriter, silent: s.cfg.LCIdle, idle: idle,
		step: func() (int, string, bool) {
			code, reason, ok := s.readFrameLC(ctx, conn, sess, appID, iid)
			if code == CloseHeartbeat {
				reason = idle
			}
			return code, reason, ok
		},
		close:  sess.Close,
		detach: func() { s.core.Detach(appID, iid, sess) },
	}
}

// admitLC checks a login: the app exists, then what admitDevice checks. The original's login
// carries no key: the app id and a registered installation id are the device's identity.
func (s *Server) admitLC(ctx context.Context, appID, iid string) (int, string, string) {
	if appID == "" || iid == "" {
		return CloseBadRequest, "login needs appId and installationId", "bad_request"
	}
	app, err := s.apps.GetApp(ctx, appID)
	if errors.Is(err, store.ErrNotFound) {
		return CloseUnauthorized, "unknown app", "unauthorized"
	}
	if err != nil {
		s.log.Warn("cannot read an app for a device connection", zap.String("app_id", appID), zap.Error(err))
		return CloseInternal, "cannot check the app: retry later", "error"
	}
	return s.admitDevice(ctx, &app, iid)
}

// decodeLCFrame decodes a data frame of the original's protocol; a non-zero code closes.
func (s *Server) decodeLCFrame(op ws.OpCode, payload []byte) (*lcproto.GenericCommand, int, string) {
	if op != ws.OpBinary {
		s.badFrame.Inc()
		return nil, CloseBadFrame, "text frames are not part of the " + SubProtocolLC21 + " protocol"
	}
	c, err := DecodeLC(payload)
	if err != nil {
		s.badFrame.Inc()
		return nil, CloseBadFrame, err.Error()
	}
	return c, 0, ""
}

// readClientFrame reads one whole client frame and unmasks it. A non-zero code ends the
// connection with it; code 0 with op 0 means the connection is gone (or timed out: the
// caller's deadline decides what a timeout means, see readLoopLC).
func (s *Server) readClientFrame(conn net.Conn) (ws.OpCode, []byte, int, string) {
	h, err := ws.ReadHeader(conn)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return 0, nil, CloseHeartbeat, "no frame in time"
		}
		return 0, nil, 0, ""
	}
	if h.Length > int64(s.cfg.MaxFrame) {
		s.badFrame.Inc()
		return 0, nil, CloseTooBig, "frame larger than " + strconv.Itoa(s.cfg.MaxFrame) + " bytes"
	}
	if !h.Masked {
		s.badFrame.Inc()
		return 0, nil, CloseProtocol, "client frames must be masked"
	}
	if !h.Fin || h.OpCode == ws.OpContinuation {
		s.badFrame.Inc()
		return 0, nil, CloseProtocol, "fragmented frames are not supported"
	}
	switch h.OpCode {
	case ws.OpClose, ws.OpPing, ws.OpPong, ws.OpText, ws.OpBinary:
	default:
		s.badFrame.Inc()
		return 0, nil, CloseProtocol, "unknown opcode"
	}
	payload := make([]byte, h.Length)
	if _, err := io.ReadFull(conn, payload); err != nil {
		return 0, nil, 0, ""
	}
	ws.Cipher(payload, h.Mask, 0)
	return h.OpCode, payload, 0, ""
}

// readFrameLC reads and handles one of a logged-in device's frames (the read deadline is the
// caller's); it returns true to go on, or false with the close code and reason to end with (0
// when the connection is already gone).
func (s *Server) readFrameLC(ctx context.Context, conn net.Conn, sess *lcSession, app, iid string) (int, string, bool) {
	op, payload, code, reason := s.readClientFrame(conn)
	if code != 0 || op == 0 {
		return code, reason, false
	}
	switch op {
	case ws.OpClose:
		return CloseNormal, "", false
	case ws.OpPing: // the SDK's heartbeat
		if err := sess.writeFrame(ws.NewPongFrame(payload)); err != nil {
			return 0, "", false
		}
		return 0, "", true
	case ws.OpPong:
		return 0, "", true
	}
	c, code, reason := s.decodeLCFrame(op, payload)
	if code != 0 {
		return code, reason, false
	}
	switch c.GetCmd() {
	case lcproto.CommandType_ack:
		if c.InstallationId != nil && c.GetInstallationId() != iid {
			s.badFrame.Inc()
			return CloseBadFrame, "ack of another installation", false
		}
		ids := make([]string, 0, len(c.GetAckMessage().GetIds()))
		for _, id := range c.GetAckMessage().GetIds() {
			if id != "" {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return 0, "", true
		}
		if err := s.core.Ack(ctx, app, iid, ids); err != nil {
			s.log.Warn("cannot record acks", zap.String("app_id", app), zap.Error(err))
		}
	case lcproto.CommandType_login:
		if c.GetService() == lcServicePush && c.GetAppId() == app && c.GetInstallationId() == iid {
			if err := sess.write(lcLoggedIn); err != nil { // a login again: already done
				return 0, "", false
			}
			return 0, "", true
		}
		if c.GetService() == lcServicePush {
			s.badFrame.Inc()
			return CloseBadFrame, "login of another installation on this connection", false
		}
		if err := sess.write(lcError(c.I, LCErrUnsupported, "not supported by this server: push only")); err != nil {
			return 0, "", false
		}
	default:
		// IM and LiveQuery share the SDK's socket: refuse the command, keep the pushes.
		if err := sess.write(lcError(c.I, LCErrUnsupported, "not supported by this server: push only")); err != nil {
			return 0, "", false
		}
	}
	return 0, "", true
}

// lcSession writes the original's commands (binary frames) to one connection.
type lcSession struct {
	frameWriter
	// offline counts the cached messages the login's flush still writes (marked offline);
	// guarded by mu.
	offline int
}

func (w *lcSession) write(cmd []byte) error {
	return w.writeFrame(ws.NewBinaryFrame(cmd))
}

// Deliver implements Session: one data command per message, all in one write; the first
// offline messages (the login's flush) are marked offline.
func (w *lcSession) Deliver(msgs []push.DirectMessage) error {
	return w.deliver(msgs, ws.OpBinary, func(dst []byte, m *push.DirectMessage) []byte {
		offline := w.offline > 0 // deliver holds mu
		if offline {
			w.offline--
		}
		return AppendLCData(dst, m, offline)
	})
}

// Close implements Session: the original's goaway command for CloseMoved (its SDKs drop the
// cached router answer and connect again: docs/own-channel.md, section 9.6), its error
// command for our other 4xxx codes, then a close frame with code and reason (none when code
// is 0).
func (w *lcSession) Close(code int, reason string) {
	w.close(code, reason, func() {
		if code == CloseMoved {
			_ = ws.WriteFrame(w.conn, ws.NewBinaryFrame(lcGoaway))
			return
		}
		if code >= 4000 {
			_ = ws.WriteFrame(w.conn, ws.NewBinaryFrame(lcError(nil, code, reason)))
		}
	})
}
