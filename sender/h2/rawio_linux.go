//go:build linux

package h2

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO is a TCP connection whose reads and writes are raw system calls on its non-blocking
// socket, made from inside syscall.RawConn's Read and Write (which wait in the runtime's
// poller, with the connection's deadlines, when the socket is not ready).
//
// Why: net.TCPConn's Read and Write go through syscall.Syscall, whose entersyscall wakes the
// runtime's sysmon thread whenever every P was idle a moment before, and sysmon then polls
// every 20 µs for a millisecond or more. A sender waiting on its gateway goes idle and wakes
// up thousands of times a second, so sysmon's wake-ups were about a fifth of pushd's CPU over
// a push (per-thread /proc counters; docs/decisions.md, "Gateway sockets without
// entersyscall"). A non-blocking read or write never blocks, so the scheduler does not need
// to hear of it, as for the runtime's own netpoll and futex calls.
type rawIO struct {
	*net.TCPConn
	rc syscall.RawConn
}

// wrapRawIO returns c with raw reads and writes when it is a TCP connection, else c.
func wrapRawIO(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawIO{TCPConn: tc, rc: rc}
}

func (c *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until readable
			}
			n, errno = int(r), e
			return true
		}
	})
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

func (c *rawIO) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// opError is the error net.TCPConn's Read or Write would give for err: RawConn's own errors
// (a deadline, a closed connection) come as a *net.OpError of op "raw-read" or "raw-write",
// whose cause is kept.
func (c *rawIO) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
