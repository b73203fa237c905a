//go:build linux

package direct

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// defaultReadLoop is the read loop of a zero Config.ReadLoop.
const defaultReadLoop = ReadLoopEpoll

// errPollerStopped refuses a connection to a stopped poller (it is read on a goroutine).
var errPollerStopped = errors.New("the epoll loop is stopped")

// pollEvents is what a connection is armed for: readable or hung up, one event per arming
// (EPOLLONESHOT), so that one goroutine at a time reads a connection; it is armed again after
// each frame. Level-triggered: a second frame already received fires at once.
const pollEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

// poller is the epoll read loop (ReadLoopEpoll): one goroutine waits on an epoll instance
// holding every idle attached connection; a ready one gets a goroutine that reads and handles
// one frame and arms it again. An idle connection costs its socket, its reader and a timer.
//
// A connection is the Go runtime's net.Conn as well: its fd is reached only through
// syscall.RawConn.Control, which holds it open for the call, so a connection closed
// concurrently (and its fd number reused) is never armed by mistake. Events carry the fd and
// a sequence number of the registration, so an event of a closed connection is dropped.
type poller struct {
	s    *Server
	epfd int
	wake int // an eventfd in the epoll set: written to stop the loop

	mu      sync.Mutex
	conns   map[int32]*polled // by fd
	seq     uint32
	stopped bool
}

// polled is one connection on the poller. Its state (guarded by mu): idle (armed), busy (a
// goroutine reads a frame), done (its end is claimed by whoever set done: the reading
// goroutine, the idle timer, or the session's close).
type polled struct {
	p     *poller
	r     *reader
	rc    syscall.RawConn
	fd    int32
	seq   uint32
	timer *time.Timer // fires silent after the last frame

	mu   sync.Mutex
	busy bool
	done bool
	last time.Time // end of the last frame; written by the busy goroutine
}

func newPoller(s *Server) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("cannot create the epoll instance of the device connections: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err == nil {
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wake)})
	}
	if err != nil {
		_ = unix.Close(epfd)
		if wake > 0 {
			_ = unix.Close(wake)
		}
		return nil, fmt.Errorf("cannot create the wake-up eventfd of the device connections' epoll loop: %w", err)
	}
	p := &poller{s: s, epfd: epfd, wake: wake, conns: map[int32]*polled{}}
	s.wg.Go(p.run)
	return p, nil
}

// run waits for ready connections until stop.
func (p *poller) run() {
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(p.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			// Not expected (epfd is ours until close): the connections left are read by
			// nobody; stop takes them down with the server.
			p.s.log.Error("the epoll loop of the device connections failed", zap.Error(err))
			return
		}
		for i := range n {
			ev := &events[i]
			if ev.Fd == int32(p.wake) {
				return
			}
			p.mu.Lock()
			pc := p.conns[ev.Fd]
			p.mu.Unlock()
			if pc != nil && pc.seq == uint32(ev.Pad) {
				pc.ready()
			}
		}
	}
}

// add puts an attached connection on the poller; an error leaves it to the caller (a closed
// connection, a stopped poller).
func (p *poller) add(r *reader) error {
	sc, ok := r.conn.(syscall.Conn)
	if !ok {
		return fmt.Errorf("connection %T has no file descriptor", r.conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	pc := &polled{p: p, r: r, rc: rc, last: time.Now()}
	if !r.w.setOnClose(pc.closed) {
		return net.ErrClosed
	}
	pc.mu.Lock() // expire, however early it fires, sees the timer set
	pc.timer = time.AfterFunc(r.silent, pc.expire)
	pc.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	var ctlErr error
	if !p.stopped {
		p.seq++
		pc.seq = p.seq
		err = rc.Control(func(fd uintptr) {
			pc.fd = int32(fd)
			p.conns[pc.fd] = pc
			ctlErr = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(fd), pc.event())
			if ctlErr != nil {
				delete(p.conns, pc.fd)
			}
		})
	} else {
		err = errPollerStopped
	}
	if err = errors.Join(err, ctlErr); err != nil {
		pc.mu.Lock()
		pc.done = true // the caller reads it: closed() and expire() do nothing
		pc.mu.Unlock()
		pc.timer.Stop()
		return err
	}
	return nil
}

func (pc *polled) event() *unix.EpollEvent {
	return &unix.EpollEvent{Events: pollEvents, Fd: pc.fd, Pad: int32(pc.seq)}
}

// ready starts a goroutine for one frame of a connection the epoll loop reported.
func (pc *polled) ready() {
	pc.mu.Lock()
	if pc.busy || pc.done {
		pc.mu.Unlock()
		return
	}
	pc.busy = true
	pc.mu.Unlock()
	pc.p.s.wg.Go(pc.readOne)
}

// readOne reads and handles one frame, within silent of the last one, then arms the
// connection again, or ends it.
func (pc *polled) readOne() {
	r := pc.r
	_ = r.conn.SetReadDeadline(pc.last.Add(r.silent))
	code, reason, ok := r.step()
	if ok {
		pc.last = time.Now()
		pc.timer.Reset(r.silent)
		pc.mu.Lock()
		var ctlErr error
		err := pc.rc.Control(func(fd uintptr) {
			ctlErr = unix.EpollCtl(pc.p.epfd, unix.EPOLL_CTL_MOD, int(fd), pc.event())
		})
		if err == nil && ctlErr == nil {
			pc.busy = false
			pc.mu.Unlock()
			return
		}
		// Closed while the frame was read (its close left the end to this goroutine).
		code, reason = 0, ""
		if err == nil {
			code, reason = CloseInternal, "the gateway failed to serve the connection: reconnect"
			pc.p.s.log.Warn("cannot arm a device connection for reading", zap.Error(ctlErr))
		}
	} else {
		pc.mu.Lock()
	}
	pc.done = true
	pc.mu.Unlock()
	r.close(code, reason)
	pc.cleanup()
}

// expire closes an idle connection silent for too long (a busy one ends by its read deadline).
func (pc *polled) expire() {
	pc.mu.Lock()
	if pc.busy || pc.done {
		pc.mu.Unlock()
		return
	}
	pc.done = true
	pc.mu.Unlock()
	pc.r.close(CloseHeartbeat, pc.r.idle)
	pc.cleanup()
}

// closed is the session's onClose: a connection closed elsewhere (replaced by a newer one, a
// failed write, shutdown) while idle is taken off the poller here; while busy, its reading
// goroutine sees the close and ends it. Runs with the session's writer locked.
func (pc *polled) closed() {
	pc.mu.Lock()
	if pc.busy || pc.done {
		pc.mu.Unlock()
		return
	}
	pc.done = true
	pc.mu.Unlock()
	pc.cleanup()
}

// cleanup forgets an ended connection (its fd left the epoll set when it was closed).
func (pc *polled) cleanup() {
	p := pc.p
	p.mu.Lock()
	if p.conns[pc.fd] == pc {
		delete(p.conns, pc.fd)
	}
	p.mu.Unlock()
	pc.timer.Stop()
	pc.r.detach()
	p.s.untrack(pc.r.conn)
}

// stop ends the loop and forgets the idle connections left (the server closed them); busy
// ones end with their reading goroutines. close releases the epoll instance after those.
func (p *poller) stop() {
	p.mu.Lock()
	p.stopped = true
	left := make([]*polled, 0, len(p.conns))
	for _, pc := range p.conns {
		left = append(left, pc)
	}
	p.mu.Unlock()
	var one [8]byte
	one[0] = 1 // eventfd's counter is a native-endian uint64; any non-zero value wakes
	_, _ = unix.Write(p.wake, one[:])
	for _, pc := range left {
		pc.closed()
	}
}

// close releases the epoll instance; after stop, once no goroutine of the poller runs.
func (p *poller) close() {
	_ = unix.Close(p.epfd)
	_ = unix.Close(p.wake)
}
