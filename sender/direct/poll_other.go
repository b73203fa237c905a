//go:build !linux

package direct

import "errors"

// defaultReadLoop is the read loop of a zero Config.ReadLoop: the epoll loop is Linux's.
const defaultReadLoop = ReadLoopGoroutine

// poller is the epoll read loop, built on Linux only (poll_linux.go).
type poller struct{}

func newPoller(*Server) (*poller, error) {
	return nil, errors.New("the epoll read loop needs Linux: use --direct-read-loop goroutine")
}

func (*poller) add(*reader) error { return errors.New("no epoll read loop") }
func (*poller) stop()             {}
func (*poller) close()            {}
