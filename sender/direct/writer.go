package direct

import (
	"bytes"
	"net"
	"sync"
	"time"

	"github.com/gobwas/ws"

	"github.com/pushd/pushd/push"
)

// frameWriter is what both codecs' sessions share: the connection's writes, serialised by mu
// and each bounded by the write timeout, and an idempotent close.
type frameWriter struct {
	conn    net.Conn
	timeout time.Duration
	mu      sync.Mutex
	closed  bool
	buf     []byte // one message's encoding, reused; guarded by mu
	// onClose, when set, runs once the connection is closed (the epoll read loop's clean-up of
	// a connection no goroutine reads); guarded by mu.
	onClose func()
}

// setOnClose sets f to run after the close; false (f not set) when the writer is closed
// already.
func (w *frameWriter) setOnClose(f func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.onClose = f
	return true
}

func (w *frameWriter) writeFrame(f ws.Frame) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return net.ErrClosed
	}
	_ = w.conn.SetWriteDeadline(time.Now().Add(w.timeout))
	return ws.WriteFrame(w.conn, f)
}

// deliver writes one frame of opcode op per message, encoded by appendMsg (called with mu
// held), all in one write.
func (w *frameWriter) deliver(msgs []push.DirectMessage, op ws.OpCode, appendMsg func(dst []byte, m *push.DirectMessage) []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return net.ErrClosed
	}
	var out bytes.Buffer
	for i := range msgs {
		w.buf = appendMsg(w.buf[:0], &msgs[i])
		if err := ws.WriteHeader(&out, ws.Header{Fin: true, OpCode: op, Length: int64(len(w.buf))}); err != nil {
			return err
		}
		out.Write(w.buf)
	}
	if cap(w.buf) > 4<<10 {
		w.buf = nil // do not keep a large buffer on an idle connection
	}
	_ = w.conn.SetWriteDeadline(time.Now().Add(w.timeout))
	_, err := w.conn.Write(out.Bytes())
	return err
}

// close sends, when code is not 0, what first writes (if any) and a close frame with code
// and reason, then closes the connection, which ends its reading goroutine (or, read by the
// epoll loop, runs onClose). Only the first call does anything.
func (w *frameWriter) close(code int, reason string, first func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	if code != 0 {
		_ = w.conn.SetWriteDeadline(time.Now().Add(time.Second))
		if first != nil {
			first()
		}
		_ = ws.WriteFrame(w.conn, ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusCode(code), reason)))
	}
	_ = w.conn.Close()
	if w.onClose != nil {
		w.onClose()
	}
}
