//go:build linux

package rawtcp

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Conn is a TCP connection whose reads and writes are raw system calls (see the package
// doc). A raw call holds its thread only for the copy a non-blocking socket does.
type Conn struct {
	*net.TCPConn
	rc   syscall.RawConn
	r, w rawIO
}

// rawIO is one direction's call: the buffer and the result of the function RawConn calls
// (fn, bound once in Wrap), kept here so that a Read or Write allocates no closure. mu holds
// them for one call at a time (net.Conn allows concurrent calls).
type rawIO struct {
	mu    sync.Mutex
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// Wrap returns c with raw reads and writes (a *Conn) when it is a *net.TCPConn, else c.
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	rw := &Conn{TCPConn: tc, rc: rc}
	rw.r.fn, rw.w.fn = rw.r.read, rw.w.write
	return rw
}

// Read is net.TCPConn's Read: it waits in the poller until the socket has data (or the read
// deadline passes), then reads with one raw read(2).
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	c.r.p, c.r.n, c.r.errno = p, 0, 0
	err := c.rc.Read(c.r.fn)
	n, errno := c.r.n, c.r.errno
	c.r.p = nil // the caller's buffer is not ours to keep
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// read is RawConn.Read's function: false (wait until readable) while the socket has nothing.
func (s *rawIO) read(fd uintptr) bool {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.p[0])), uintptr(len(s.p)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		s.n, s.errno = int(r), e
		return true
	}
}

// Write is net.TCPConn's Write: raw write(2) calls until all of p is written, waiting in the
// poller whenever the socket's buffer is full (or until the write deadline passes, with the
// bytes written so far).
func (c *Conn) Write(p []byte) (int, error) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	c.w.p, c.w.n, c.w.errno = p, 0, 0
	err := c.rc.Write(c.w.fn)
	n, errno := c.w.n, c.w.errno
	c.w.p = nil
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// write is RawConn.Write's function: it writes what is left of s.p, false (wait until
// writable) whenever the socket's buffer is full.
func (s *rawIO) write(fd uintptr) bool {
	for s.n < len(s.p) {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&s.p[s.n])), uintptr(len(s.p)-s.n))
		switch e {
		case 0:
			s.n += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			s.errno = e
			return true
		}
	}
	return true
}

// opError is the error net.TCPConn's Read or Write would give for err: RawConn's own errors
// (a deadline, a closed connection) come as a *net.OpError of op "raw-read" or "raw-write",
// whose cause is kept.
func (c *Conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
