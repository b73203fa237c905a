package gateway

import (
	"context"
	"sync"
)

// slots is a bounded set's counting semaphore: one unit per request in flight. Waiters are
// served in arrival order, and a waiter may ask to be woken only once several units are
// free, taking up to as many as it needs: a batch waiting at the stream limit then wakes
// once per few answers, and queues (and writes) several requests at a time, instead of one
// wake-up and one write per answer.
type slots struct {
	mu      sync.Mutex
	free    int
	closed  bool
	waiters []*slotWaiter // FIFO
}

type slotWaiter struct {
	least, most int
	got         int           // units granted; 0 when ready closed because the set closed
	ready       chan struct{} // closed once granted or closed
}

func newSlots(n int) *slots { return &slots{free: n} }

// tryTake takes one unit if one is free and nobody waits.
func (s *slots) tryTake() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.free == 0 || len(s.waiters) > 0 {
		return false
	}
	s.free--
	return true
}

// take waits until at least least units are free (and every earlier waiter served), then
// takes up to most of them; least <= most, and least must not exceed the capacity.
func (s *slots) take(ctx context.Context, least, most int) (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	if len(s.waiters) == 0 && s.free >= least {
		n := min(s.free, most)
		s.free -= n
		s.mu.Unlock()
		return n, nil
	}
	w := &slotWaiter{least: least, most: most, ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		if w.got == 0 {
			return 0, ErrClosed
		}
		return w.got, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.ready: // granted (or closed) meanwhile: give the grant back
		s.free += w.got
	default:
		for i, x := range s.waiters {
			if x == w {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				break
			}
		}
	}
	s.serve() // our units, or our place at the head, may serve the next
	return 0, ctx.Err()
}

// give returns n units.
func (s *slots) give(n int) {
	s.mu.Lock()
	s.free += n
	s.serve()
	s.mu.Unlock()
}

// serve grants waiters in order while the first's least is met; s.mu held.
func (s *slots) serve() {
	k := 0
	for k < len(s.waiters) && !s.closed {
		w := s.waiters[k]
		if s.free < w.least {
			break
		}
		w.got = min(s.free, w.most)
		s.free -= w.got
		close(w.ready)
		k++
	}
	if k > 0 {
		n := copy(s.waiters, s.waiters[k:])
		clear(s.waiters[n:])
		s.waiters = s.waiters[:n]
	}
}

// close fails every waiter and every later take.
func (s *slots) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, w := range s.waiters {
		close(w.ready)
	}
	s.waiters = nil
}
