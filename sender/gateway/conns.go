package gateway

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by Conns.Acquire after Close.
var ErrClosed = errors.New("connections closed")

// Conns is a small set of HTTP/2 connections (each element is a client whose transport holds
// exactly one connection). Acquire picks the connection with the fewest requests in flight and
// opens another only when every open one already carries streams requests and fewer than max
// are open, so a pool runs on one connection until its streams saturate.
type Conns[T any] struct {
	max     int
	streams int64
	dial    func() (T, error)
	close   func(T)

	list atomic.Pointer[[]*Conn[T]] // immutable snapshot; replaced under mu

	mu     sync.Mutex
	closed bool
}

// Conn is one connection of a Conns and its in-flight count.
type Conn[T any] struct {
	C        T
	inflight atomic.Int64
}

// Release ends one request acquired on c.
func (c *Conn[T]) Release() { c.inflight.Add(-1) }

// NewConns returns an empty set; dial builds one connection's client (it must not block on the
// network: connecting happens on first use), closeFn releases it.
func NewConns[T any](max, streams int, dial func() (T, error), closeFn func(T)) *Conns[T] {
	if max < 1 {
		max = 1
	}
	if streams < 1 {
		streams = 1
	}
	c := &Conns[T]{max: max, streams: int64(streams), dial: dial, close: closeFn}
	c.list.Store(&[]*Conn[T]{})
	return c
}

// Acquire returns the connection for one request; the caller calls Release when the request ends.
func (c *Conns[T]) Acquire() (*Conn[T], error) {
	for {
		list := *c.list.Load()
		best := least(list)
		if best != nil && (best.inflight.Load() < c.streams || len(list) >= c.max) {
			best.inflight.Add(1)
			return best, nil
		}
		if err := c.grow(len(list)); err != nil {
			if best != nil { // cannot open another: share the open ones
				best.inflight.Add(1)
				return best, nil
			}
			return nil, err
		}
	}
}

func least[T any](list []*Conn[T]) *Conn[T] {
	var best *Conn[T]
	var min int64
	for _, cn := range list {
		if n := cn.inflight.Load(); best == nil || n < min {
			best, min = cn, n
		}
	}
	return best
}

// grow adds a connection unless another goroutine already changed the set since it had seen n.
func (c *Conns[T]) grow(seen int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	old := *c.list.Load()
	if len(old) != seen {
		return nil // someone else grew it: pick again
	}
	cl, err := c.dial()
	if err != nil {
		return err
	}
	next := make([]*Conn[T], len(old), len(old)+1)
	copy(next, old)
	next = append(next, &Conn[T]{C: cl})
	c.list.Store(&next)
	return nil
}

// Len is the number of open connections.
func (c *Conns[T]) Len() int { return len(*c.list.Load()) }

// Close closes every connection; later Acquire calls fail with ErrClosed.
func (c *Conns[T]) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	list := *c.list.Load()
	c.list.Store(&[]*Conn[T]{})
	for _, cn := range list {
		c.close(cn.C)
	}
}
