package h2

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushd/pushd/sender/gateway"
)

// group is the completion of one DoBatch attempt: every stream of it decrements left as it
// ends, and the one that reaches zero signals done. One wake-up and one deadline per batch,
// not per request.
type group struct {
	left  atomic.Int64
	done  chan struct{} // buffered 1
	timer *time.Timer
	ents  []batchEntry
	conns []*Conn // connections the attempt queued streams on (kicked once each)
	idx   []int   // the indexes still to send (NotProcessed answers are sent again)
	// taken holds the streams an attempt's wait took beyond the one it needed, used by the
	// next requests; handed back if the attempt ends with some left.
	taken []*gateway.Conn[*poolSlot]
}

// batchEntry is one request of an attempt.
type batchEntry struct {
	i    int // index into the caller's slices
	s    *stream
	c    *Conn
	slot *gateway.Conn[*poolSlot]
	gone bool // cancelled: its stream is no longer ours, and it signals nothing
}

var groupPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &group{done: make(chan struct{}, 1), timer: t}
}}

// enqueue queues s (of group g) on c without waking the writer; false when c takes no new
// stream (s is then not queued).
func (c *Conn) enqueue(s *stream) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil || c.goAway {
		return false
	}
	c.waiting = append(c.waiting, s)
	return true
}

// Batch is one DoBatch call's requests and answers, kept between calls (in a sync.Pool) so
// that a batch allocates nothing once warm.
type Batch struct {
	Reqs []Request
	Res  []Response
	Errs []error
	At   []int // Reqs[k] is the caller's item At[k]
}

// Add appends a zero request for the caller's item i and returns it to fill.
func (b *Batch) Add(i int) *Request {
	b.Reqs = append(b.Reqs, Request{})
	b.At = append(b.At, i)
	return &b.Reqs[len(b.Reqs)-1]
}

// Do sends b.Reqs on p (DoBatch), with Res and Errs sized to them.
func (b *Batch) Do(ctx context.Context, p *Pool) {
	n := len(b.Reqs)
	if cap(b.Res) < n {
		b.Res = make([]Response, n)
		b.Errs = make([]error, n)
	}
	b.Res, b.Errs = b.Res[:n], b.Errs[:n]
	p.DoBatch(ctx, b.Reqs, b.Res, b.Errs)
}

// Reset empties b for the next batch, dropping what its requests and errors referenced.
func (b *Batch) Reset() {
	clear(b.Reqs)
	clear(b.Errs)
	b.Reqs, b.At = b.Reqs[:0], b.At[:0]
}

// DoBatch sends every request of reqs at once and waits for all their answers: res[i] and
// errs[i] are what Do would have answered for reqs[i] (errs[i] for Reply). The requests share
// one completion and one deadline (Config.RequestTimeout, from when the last was queued) instead
// of a wake-up and a timer each; requests the server did not process are sent again, up to
// NotProcessedAttempts times, like Do. len(res) and len(errs) must be at least len(reqs).
func (p *Pool) DoBatch(ctx context.Context, reqs []Request, res []Response, errs []error) {
	g := groupPool.Get().(*group)
	g.idx = g.idx[:0]
	for i := range reqs {
		g.idx = append(g.idx, i)
	}
	var tries []uint8 // per request; allocated only once one is not processed
	for len(g.idx) > 0 {
		p.attemptBatch(ctx, g, reqs, res, errs)
		n := 0
		for _, i := range g.idx {
			switch {
			case errs[i] == errDeferred:
				// not sent this round (the set was full): next round, no attempt spent
			case errors.Is(errs[i], ErrNotProcessed):
				if len(tries) == 0 {
					tries = make([]uint8, len(reqs))
				}
				if tries[i]++; int(tries[i]) >= NotProcessedAttempts {
					continue
				}
			default:
				continue
			}
			g.idx[n] = i
			n++
		}
		g.idx = g.idx[:n]
	}
	groupPool.Put(g)
}

// errDeferred marks a request an attempt left for the next round (internal to DoBatch).
var errDeferred = errors.New("http2 request deferred")

// attemptBatch sends the requests g.idx names once.
func (p *Pool) attemptBatch(ctx context.Context, g *group, reqs []Request, res []Response, errs []error) {
	g.ents, g.conns = g.ents[:0], g.conns[:0]
	g.left.Store(1) // the attempt's own reference, dropped once every stream is queued
	timeout := p.timeout
	// waitCtx bounds this attempt's waits for a stream, made at the first: one deadline for
	// all of them rather than a context and a timer for each request that waits.
	var waitCtx context.Context
	for k, i := range g.idx {
		errs[i] = nil
		var slot *gateway.Conn[*poolSlot]
		if n := len(g.taken); n > 0 {
			slot, g.taken = g.taken[n-1], g.taken[:n-1]
		} else if slot, _ = p.conns.TryAcquire(); slot == nil {
			// Every stream of the set is taken. The streams this attempt queued are sent
			// first and give their slot back as each ends (signal), so waiting cannot wait on
			// ourselves; the waits are bounded by the request timeout, after which the rest is
			// left for the next round (DoBatch), once this attempt's deadline has dealt with
			// streams that never end. The wait is for several streams (refillStreams) when
			// this many requests remain: woken once per few answers, not at each, it queues
			// requests that the writer then sends together.
			g.kick()
			if waitCtx == nil {
				var cancel context.CancelFunc
				waitCtx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			rest := len(g.idx) - k
			var err error
			if g.taken, err = p.acquireFor(ctx, waitCtx, min(rest, refillStreams), rest, g.taken); err != nil {
				errs[i] = err
				continue
			}
			n := len(g.taken)
			slot, g.taken = g.taken[n-1], g.taken[:n-1]
		}
		c, err := slot.C.conn(ctx)
		if err != nil {
			slot.Release()
			errs[i] = &dialError{err}
			continue
		}
		s := streamPool.Get().(*stream)
		s.req = reqs[i]
		s.id, s.sent, s.recvd, s.status, s.retryAfter, s.body, s.err, s.grp, s.slot = 0, 0, 0, 0, "", s.body[:0], nil, g, slot
		g.left.Add(1)
		if !c.enqueue(s) {
			g.left.Add(-1)
			slot.Release()
			s.req, s.grp, s.slot = Request{}, nil, nil
			streamPool.Put(s)
			errs[i] = errUnusable
			continue
		}
		g.ents = append(g.ents, batchEntry{i: i, s: s, c: c, slot: slot})
		g.addConn(c)
	}
	// Every request took one stream from a wait's surplus, so none is left; were one left,
	// it goes back rather than leak.
	for _, slot := range g.taken {
		slot.Release()
	}
	clear(g.taken)
	g.taken = g.taken[:0]
	g.kick()
	// left counts the queued streams not yet ended; the attempt's own reference kept it above
	// zero while streams were queued, so done is signalled only once all of them ended.
	if g.left.Add(-1) > 0 {
		g.timer.Reset(timeout)
		var err error
		select {
		case <-g.done:
		case <-ctx.Done():
			err = ctx.Err()
		case <-g.timer.C:
			err = ErrTimeout
		}
		g.timer.Stop()
		if err != nil {
			g.abandon(err, errs)
		}
	}
	for k := range g.ents {
		e := &g.ents[k]
		if e.gone {
			e.slot.Release() // a cancelled stream does not signal, so it did not give it back
			*e = batchEntry{}
			continue
		}
		s := e.s
		errs[e.i] = s.err
		if s.err == nil {
			r := &res[e.i]
			r.Status, r.RetryAfter = s.status, s.retryAfter
			r.Body = append(r.Body[:0], s.body...)
		}
		s.req, s.grp = Request{}, nil
		streamPool.Put(s)
		*e = batchEntry{}
	}
}

// refillStreams is how many free streams a batch waiting at the set's limit waits for (when
// it has that many requests left): few enough that the wait is a few answers long.
const refillStreams = 16

// acquireFor waits, until actx (ctx with the attempt's deadline) ends, for at least least
// streams of the set and appends up to most to dst: errDeferred when none came before the
// deadline.
func (p *Pool) acquireFor(ctx, actx context.Context, least, most int, dst []*gateway.Conn[*poolSlot]) ([]*gateway.Conn[*poolSlot], error) {
	dst, err := p.conns.AcquireUpTo(actx, least, most, dst)
	switch {
	case err == nil:
		return dst, nil
	case ctx.Err() != nil:
		return dst, ctx.Err()
	case actx.Err() != nil:
		return dst, errDeferred
	}
	return dst, errPoolClosed
}

// abandon takes the streams that have not ended off their connections (ctx ended or the
// deadline passed) and waits for those that ended meanwhile to signal.
func (g *group) abandon(err error, errs []error) {
	for k := range g.ents {
		e := &g.ents[k]
		if !e.c.cancel(e.s) {
			continue // ended: it signals (or did)
		}
		e.gone = true
		errs[e.i] = err
		if g.left.Add(-1) == 0 {
			return // every other stream had signalled: nothing more comes
		}
	}
	<-g.done
}

func (g *group) addConn(c *Conn) {
	for _, x := range g.conns {
		if x == c {
			return
		}
	}
	g.conns = append(g.conns, c)
}

// kick wakes the writers of the connections streams were queued on.
func (g *group) kick() {
	for _, c := range g.conns {
		c.kick()
	}
}
