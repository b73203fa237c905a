package direct

import (
	"net"
	"time"

	"go.uber.org/zap"
)

// Read loops (Config.ReadLoop): how an attached connection's frames are read.
const (
	// ReadLoopEpoll reads idle connections through one epoll readiness loop (Linux): no
	// goroutine and no buffer per idle connection; a ready connection's frame is read by a
	// goroutine started for it, which ends with the frame.
	ReadLoopEpoll = "epoll"
	// ReadLoopGoroutine reads each connection on its own goroutine, blocked in Read.
	ReadLoopGoroutine = "goroutine"
)

// reader is an attached connection as a read loop serves it, whichever codec speaks on it.
type reader struct {
	conn net.Conn
	w    *frameWriter
	// silent: a connection without a frame this long is closed with CloseHeartbeat and idle.
	silent time.Duration
	idle   string
	// step reads and handles one frame (the read deadline is set by the loop); false ends the
	// connection with the code and reason (code 0: it is gone already).
	step func() (code int, reason string, ok bool)
	// close closes the session (code 0: without a close frame); detach removes it from Core.
	close  func(code int, reason string)
	detach func()
}

// loop reads r on this goroutine until the connection ends, each frame within silent.
func (r *reader) loop() (code int, reason string) {
	for {
		_ = r.conn.SetReadDeadline(time.Now().Add(r.silent))
		code, reason, ok := r.step()
		if !ok {
			return code, reason
		}
	}
}

// read serves an attached connection until it ends: on the epoll loop when there is one
// (returning at once), else on a fresh goroutine, whose stack starts small where the
// handshake's had grown (an idle connection's cost is then mostly that stack).
func (s *Server) read(r *reader) {
	if s.poll != nil {
		err := s.poll.add(r)
		if err == nil {
			return
		}
		s.log.Debug("connection read on a goroutine instead of the epoll loop", zap.Error(err))
	}
	s.wg.Go(func() {
		defer s.untrack(r.conn)
		code, reason := r.loop()
		r.close(code, reason)
		r.detach()
	})
}
