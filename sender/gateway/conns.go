package gateway

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by Conns.AcquireContext after Close.
var ErrClosed = errors.New("connections closed")

// Conns is a small set of HTTP/2 connections (each element is a client whose transport holds
// exactly one connection). A request takes a slot first (at most max*streams are taken), then
// the connection with the fewest requests in flight, and opens another only when every open
// one already carries streams requests, so a set runs on one connection until its streams
// saturate. It never puts more than streams requests on one connection: AcquireContext waits
// for a Release instead. x/net/http2 with StrictMaxConcurrentStreams stalls a connection given
// more callers than the server's stream limit (golang/go#70809), and without it opens
// connections beyond max; the lean transport (sender/h2) queues what is beyond the server's.
type Conns[T any] struct {
	max     int
	streams int64
	dial    func() (T, error)
	close   func(T)
	// slots counts the requests in flight, at most max*streams. With every slot holder
	// counted in some connection's inflight, a holder always finds a connection below
	// streams once max are open.
	slots *slots

	list atomic.Pointer[[]*Conn[T]] // immutable snapshot; replaced under mu

	mu     sync.Mutex
	closed bool
}

// Conn is one connection of a Conns and its in-flight count.
type Conn[T any] struct {
	C        T
	inflight atomic.Int64
	slots    *slots // the set's
}

// Release ends one request acquired on c.
func (c *Conn[T]) Release() {
	c.inflight.Add(-1) // before the slot goes back: a slot holder never sees it counted
	c.slots.give(1)
}

// NewBoundedConns returns an empty set; dial builds one connection's client (it must not
// block on the network: connecting happens on first use), closeFn releases it.
func NewBoundedConns[T any](max, streams int, dial func() (T, error), closeFn func(T)) *Conns[T] {
	if max < 1 {
		max = 1
	}
	if streams < 1 {
		streams = 1
	}
	c := &Conns[T]{max: max, streams: int64(streams), dial: dial, close: closeFn}
	c.slots = newSlots(c.max * int(c.streams))
	c.list.Store(&[]*Conn[T]{})
	return c
}

// AcquireContext returns the connection for one request, waiting, until ctx ends or the set
// closes, while max connections each carry streams requests; the caller calls Release when
// the request ends.
func (c *Conns[T]) AcquireContext(ctx context.Context) (*Conn[T], error) {
	if _, err := c.slots.take(ctx, 1, 1); err != nil {
		return nil, err
	}
	return c.place()
}

// AcquireUpTo is AcquireContext for up to most requests: it waits until at least least
// streams are free (least is capped at the set's capacity), takes up to most and appends
// their connections to dst. A batch at the stream limit waits once for several answers
// instead of once for each. A connection that cannot be opened ends the call with what was
// taken (the error only when that is nothing).
func (c *Conns[T]) AcquireUpTo(ctx context.Context, least, most int, dst []*Conn[T]) ([]*Conn[T], error) {
	least = max(1, min(least, most, c.max*int(c.streams)))
	n, err := c.slots.take(ctx, least, max(least, most))
	if err != nil {
		return dst, err
	}
	for k := range n {
		cn, err := c.place()
		if err != nil {
			c.slots.give(n - k - 1) // place gave back its own
			if k == 0 {
				return dst, err
			}
			return dst, nil
		}
		dst = append(dst, cn)
	}
	return dst, nil
}

// place counts a request whose slot the caller holds on a connection below streams, opening
// one if needed; on error the slot is given back.
func (c *Conns[T]) place() (*Conn[T], error) {
	for {
		list := *c.list.Load()
		if cn := c.reserve(list); cn != nil {
			return cn, nil
		}
		if len(list) >= c.max {
			// Every slot holder but us is counted on some connection, so one is below streams;
			// another holder took it between our look and our CAS: look again.
			continue
		}
		if err := c.grow(len(list)); err != nil {
			c.slots.give(1)
			return nil, err
		}
	}
}

// TryAcquire is AcquireContext without the wait: false when every stream is taken (or the set
// is closed).
func (c *Conns[T]) TryAcquire() (*Conn[T], bool) {
	if !c.slots.tryTake() {
		return nil, false
	}
	cn, err := c.place()
	return cn, err == nil
}

// reserve counts one request on the least-loaded connection below streams, or returns nil.
func (c *Conns[T]) reserve(list []*Conn[T]) *Conn[T] {
	for {
		best := least(list)
		if best == nil {
			return nil
		}
		n := best.inflight.Load()
		if n >= c.streams {
			return nil
		}
		if best.inflight.CompareAndSwap(n, n+1) {
			return best
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
	next = append(next, &Conn[T]{C: cl, slots: c.slots})
	c.list.Store(&next)
	return nil
}

// Len is the number of open connections.
func (c *Conns[T]) Len() int { return len(*c.list.Load()) }

// Close closes every connection; later AcquireContext calls fail with ErrClosed.
func (c *Conns[T]) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.slots.close()
	list := *c.list.Load()
	c.list.Store(&[]*Conn[T]{})
	for _, cn := range list {
		c.close(cn.C)
	}
}
