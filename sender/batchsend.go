package sender

import (
	"context"
	"sync"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// batchClient is a client that makes the first attempt of many deliveries at once: their
// requests go out together and their answers are awaited together (sender/h2's DoBatch), so
// a batch costs one wake-up and one deadline instead of a worker hand-off, a wake-up and a
// timer per delivery. CanBatch says whether this client does (apns and fcm on the lean
// transport).
type batchClient interface {
	CanBatch() bool
	SendBatch(ctx context.Context, ds []*push.Delivery, reps []gateway.Reply)
}

// poolRun is the deliveries of one Send call that go to one batching pool.
type poolRun struct {
	p    *pool
	ds   []*push.Delivery
	idx  []int // ds[k] is the call's delivery idx[k]
	reps []gateway.Reply
}

// sendRuns is a Send call's runs, pooled.
type sendRuns struct{ runs []poolRun }

var sendRunsPool = sync.Pool{New: func() any { return new(sendRuns) }}

// add puts delivery i (d) in p's run.
func (sr *sendRuns) add(p *pool, d *push.Delivery, i int) {
	for k := range sr.runs {
		if r := &sr.runs[k]; r.p == p {
			r.ds, r.idx = append(r.ds, d), append(r.idx, i)
			return
		}
	}
	if len(sr.runs) < cap(sr.runs) {
		sr.runs = sr.runs[:len(sr.runs)+1]
	} else {
		sr.runs = append(sr.runs, poolRun{})
	}
	r := &sr.runs[len(sr.runs)-1]
	r.p, r.ds, r.idx = p, append(r.ds[:0], d), append(r.idx[:0], i)
}

func (sr *sendRuns) reset() {
	for k := range sr.runs {
		r := &sr.runs[k]
		clear(r.ds)
		r.p, r.ds, r.idx = nil, r.ds[:0], r.idx[:0]
	}
	sr.runs = sr.runs[:0]
}

// batchable says whether the first attempt of d may go in p's batch: p sends batches, and
// nothing stands before an attempt that the worker would wait on or decide per delivery (a
// pool rate, a gateway outage, a spent quota, an own-channel fallback). The pool is checked
// again when the run is sent (sendBatch).
func (p *pool) batchable(d *push.Delivery) bool {
	return p.batch != nil && d.Fallback == nil
}

// batchReady says whether p's state lets a run skip the worker's checks now.
func (p *pool) batchReady() bool {
	if p.bucket.limited() || p.gate.isDown.Load() {
		return false
	}
	_, parked := p.quota.parked(p.key, p.cfg.now())
	return !parked
}

// sendBatch makes the first attempt of r's deliveries in batches of at most Workers (the
// pool's bound on requests in flight), one after the other, checking the pool between them:
// an open breaker fails the rest at once, and a pool not ready for batches (batchReady: a rate,
// an outage, a spent quota) gets the rest as single deliveries for its workers. In a batch, a
// delivery sent or failed for good is final at once; every other answer (a retry, a dead
// token, an auth or quota answer) goes to the workers, which go on from it exactly as after
// their own first attempt. Every answer is told to the gate here, so the next batch sees it.
func (d *Dispatcher) sendBatch(ctx context.Context, r *poolRun, b *batch) {
	p := r.p
	for len(r.ds) > 0 {
		if res, ok := p.rejected(); ok {
			for _, i := range r.idx {
				p.m.outcome(res.Outcome)
				p.done()
				b.finish(i, res, true)
			}
			return
		}
		if !p.batchReady() {
			for k, dl := range r.ds {
				if !d.enqueue(ctx, p, item{ctx: ctx, d: dl, i: r.idx[k], b: b}) {
					d.cut(p, r.idx[k+1:], b)
					return
				}
			}
			return
		}
		n := min(len(r.ds), p.cfg.Workers)
		if !d.sendChunk(ctx, p, r.ds[:n], r.idx[:n], r, b) {
			d.cut(p, r.idx[n:], b)
			return
		}
		r.ds, r.idx = r.ds[n:], r.idx[n:]
	}
}

// sendChunk sends ds (the deliveries idx of b) in one batch; false when ctx ended or the
// dispatcher closed before every answer was handed on (the rest of ds is finished, not final).
func (d *Dispatcher) sendChunk(ctx context.Context, p *pool, ds []*push.Delivery, idx []int, r *poolRun, b *batch) bool {
	n := len(ds)
	if cap(r.reps) < n {
		r.reps = make([]gateway.Reply, n)
	}
	reps := r.reps[:n]
	p.m.inflight.Add(float64(n))
	p.batch.SendBatch(ctx, ds, reps)
	p.m.inflight.Add(-float64(n))
	defer clear(reps)
	now := p.cfg.now()
	canceled := ctx.Err() != nil
	sent := 0
	defer func() { p.sent.Add(int64(sent)) }()
	for k, dl := range ds {
		rep := reps[k]
		i := idx[k]
		if rep.Kind == gateway.KindRetry && canceled {
			// Our own cancel, not the gateway's answer: not final, like a worker's.
			p.done()
			b.finish(i, push.Result{Outcome: push.OutcomeFailed, Reason: "canceled"}, false)
			continue
		}
		p.record(rep, false, now)
		var res push.Result
		switch rep.Kind {
		case gateway.KindSent:
			sent++
			res = push.Result{Outcome: push.OutcomeSent}
		case gateway.KindFailed:
			res = push.Result{Outcome: push.OutcomeFailed, Reason: rep.Reason}
		case gateway.KindCredentials:
			p.sent.Add(int64(sent)) // a proven pool fails a token-scoped reply without tripping
			sent = 0
			res = p.credentialsResult(rep)
		default:
			if !d.enqueue(ctx, p, item{ctx: ctx, d: dl, i: i, b: b, first: rep, hasFirst: true}) {
				d.cut(p, idx[k+1:], b)
				return false
			}
			continue
		}
		p.m.outcome(res.Outcome)
		p.done()
		b.finish(i, res, true)
	}
	return true
}

// enqueue hands it to p's workers; false (it is then finished, not final) when ctx ends or
// the dispatcher closes first.
func (d *Dispatcher) enqueue(ctx context.Context, p *pool, it item) bool {
	select {
	case p.queue <- it:
		p.ensureWorker()
		return true
	case <-ctx.Done():
	case <-d.closed:
	}
	p.done()
	it.b.finish(it.i, push.Result{Outcome: push.OutcomeFailed, Reason: "canceled"}, false)
	return false
}

// cut finishes the deliveries idx of b, pending in p, as not final (ctx ended or the
// dispatcher closed before they were handed on).
func (d *Dispatcher) cut(p *pool, idx []int, b *batch) {
	for _, i := range idx {
		p.done()
		b.finish(i, push.Result{Outcome: push.OutcomeFailed, Reason: "canceled"}, false)
	}
}

// cutRuns is cut of every run of a Send call that ends before sending them.
func (d *Dispatcher) cutRuns(sr *sendRuns, b *batch) {
	for k := range sr.runs {
		d.cut(sr.runs[k].p, sr.runs[k].idx, b)
	}
}
