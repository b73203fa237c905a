//go:build linux

package direct

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// KeepAlives is SO_KEEPALIVE of each connection the server holds.
func KeepAlives(s *Server) ([]int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for c := range s.open {
		rc, err := c.(syscall.Conn).SyscallConn()
		if err != nil {
			return nil, err
		}
		var v int
		var gerr error
		if err := rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE) }); err != nil {
			return nil, err
		}
		if gerr != nil {
			return nil, gerr
		}
		out = append(out, v)
	}
	return out, nil
}
