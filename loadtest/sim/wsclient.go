package sim

import (
	"bufio"
	"io"
	"net"
	"sync"

	"github.com/gobwas/ws"
)

// wsClient is the WebSocket side both device simulators share (ours, JSON text frames, and the
// original's, protobuf binary frames): masked writes serialised by one lock, the close
// handshake, and a frame reader that answers pings and records the server's close frame.
// Done, CloseCode and Close are the devices' own methods through it.
type wsClient struct {
	conn      net.Conn
	r         io.Reader // conn, or the handshake's reader holding frames sent with it
	wmu       sync.Mutex
	done      chan struct{}
	closeOnce sync.Once
	code      int
	reason    string
	wg        sync.WaitGroup
}

// newWSClient reads conn, or br when the handshake left frames in it (gobwas/ws's Dial).
func newWSClient(conn net.Conn, br *bufio.Reader) *wsClient {
	c := &wsClient{conn: conn, r: conn, done: make(chan struct{})}
	if br != nil {
		c.r = br
	}
	return c
}

// Done is closed once the connection is gone.
func (c *wsClient) Done() <-chan struct{} { return c.done }

// CloseCode is the code and reason of the server's close frame (valid after Done).
func (c *wsClient) CloseCode() (int, string) { return c.code, c.reason }

// write writes one client frame, masked.
func (c *wsClient) write(f ws.Frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return ws.WriteFrame(c.conn, ws.MaskFrame(f))
}

// Close ends the connection and waits for its goroutines.
func (c *wsClient) Close() {
	c.closeOnce.Do(func() {
		_ = c.write(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "")))
		_ = c.conn.Close()
	})
	c.wg.Wait()
}

// next reads the server's next frame other than a ping (answered here) or a close (recorded
// for CloseCode); ok is false once the connection ended.
func (c *wsClient) next() (op ws.OpCode, payload []byte, ok bool) {
	for {
		h, err := ws.ReadHeader(c.r)
		if err != nil {
			return 0, nil, false
		}
		payload = make([]byte, h.Length)
		if _, err := io.ReadFull(c.r, payload); err != nil {
			return 0, nil, false
		}
		switch h.OpCode {
		case ws.OpClose:
			code, reason := ws.ParseCloseFrameData(payload)
			c.code, c.reason = int(code), reason
			return 0, nil, false
		case ws.OpPing:
			_ = c.write(ws.NewPongFrame(payload))
		default:
			return h.OpCode, payload, true
		}
	}
}
