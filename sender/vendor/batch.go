package vendor

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// SendBatch makes one gateway request for ds, deliveries of one rendered message, and stores
// the classified reply of ds[i] in out[i]. ctx ends only when every caller of the batch gave up.
type SendBatch func(ctx context.Context, msg *push.Message, ds []*push.Delivery, out []gateway.Reply)

// Batcher groups the deliveries of one rendered message (the same *push.Message: fan-out
// renders a push once per channel) into gateway requests of up to Max targets, by group
// commit: while Concurrency requests of a message are in flight, further deliveries of it
// wait, and each finished request sends everything that waited (up to Max) as the next one.
// A lone delivery goes out at once: batching costs no added latency and needs no timer.
//
// The pool's workers call Send, one delivery each, so the batch a request carries is at most
// the pool's workers; retries come back through Send and are batched again.
type Batcher struct {
	max, concurrency int
	send             SendBatch

	mu     sync.Mutex
	groups map[*push.Message]*group // guarded by mu

	requests, targets atomic.Int64
}

type group struct {
	inflight int     // requests of this message in flight, guarded by Batcher.mu
	waiting  []*call // guarded by Batcher.mu
}

// call is one waiting Send. ready gets one signal: either rep is set, or lead is (the call
// runs that batch, its own delivery first).
type call struct {
	ctx   context.Context
	d     *push.Delivery
	rep   gateway.Reply
	lead  []*call
	ready chan struct{}
}

// NewBatcher returns a batcher of at most size deliveries per request and concurrency requests
// in flight per message.
func NewBatcher(size, concurrency int, send SendBatch) *Batcher {
	return &Batcher{max: max(size, 1), concurrency: max(concurrency, 1), send: send, groups: make(map[*push.Message]*group)}
}

// Requests and Targets count the gateway requests made and the deliveries they carried.
func (b *Batcher) Requests() int64 { return b.requests.Load() }
func (b *Batcher) Targets() int64  { return b.targets.Load() }

// Send delivers d in some batch and returns its reply. A delivery still waiting when ctx ends
// returns a canceled retry; one already in a request waits for that request's answer.
func (b *Batcher) Send(ctx context.Context, d *push.Delivery) gateway.Reply {
	c := &call{ctx: ctx, d: d}
	b.mu.Lock()
	g := b.groups[d.Message]
	if g == nil {
		g = &group{}
		b.groups[d.Message] = g
	}
	if g.inflight < b.concurrency {
		g.inflight++
		b.mu.Unlock()
		b.run(g, d.Message, []*call{c})
		return c.rep
	}
	c.ready = make(chan struct{}, 1)
	g.waiting = append(g.waiting, c)
	b.mu.Unlock()
	select {
	case <-c.ready:
	case <-ctx.Done():
		b.mu.Lock()
		if i := slices.Index(g.waiting, c); i >= 0 {
			g.waiting = slices.Delete(g.waiting, i, i+1)
			b.mu.Unlock()
			return gateway.Reply{Kind: gateway.KindRetry, Reason: "canceled"}
		}
		b.mu.Unlock()
		<-c.ready // taken into a request: its answer comes
	}
	if c.lead != nil {
		b.run(g, d.Message, c.lead)
	}
	return c.rep
}

// run makes the request of calls (calls[0] is the caller's own), then starts the next batch
// of the message, if any waited, by handing it to its first call, and answers the others.
func (b *Batcher) run(g *group, msg *push.Message, calls []*call) {
	ds := make([]*push.Delivery, len(calls))
	for i, c := range calls {
		ds[i] = c.d
	}
	out := make([]gateway.Reply, len(calls))
	ctx, release := whileAnyLive(calls)
	b.send(ctx, msg, ds, out)
	release()
	b.requests.Add(1)
	b.targets.Add(int64(len(calls)))

	b.mu.Lock()
	g.inflight--
	var next []*call
	if n := min(len(g.waiting), b.max); n > 0 {
		next = slices.Clone(g.waiting[:n])
		rest := copy(g.waiting, g.waiting[n:])
		clear(g.waiting[rest:])
		g.waiting = g.waiting[:rest]
		g.inflight++
	} else if g.inflight == 0 {
		delete(b.groups, msg)
	}
	b.mu.Unlock()
	if next != nil {
		next[0].lead = next
		next[0].ready <- struct{}{}
	}
	for i, c := range calls {
		c.rep = out[i]
		if i > 0 {
			c.ready <- struct{}{}
		}
	}
}

// whileAnyLive returns a context that ends once the context of every call has ended: a
// request carries deliveries of several Send calls, and one caller giving up (its batch
// abandoned) must not abort the others' request. It keeps the values of the first call's.
func whileAnyLive(calls []*call) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(calls[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(calls)))
	stops := make([]func() bool, len(calls))
	for i, c := range calls {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}
