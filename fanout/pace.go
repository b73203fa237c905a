package fanout

import (
	"context"
	"time"
)

// pacer spaces a task's deliveries at rate targets/s (a virtual-scheduling token bucket: each
// batch of n may start once the previous ones have used their n/rate share of time). Unused
// time does not accumulate into a burst: a task that was slow does not catch up by exceeding
// its share. A nil pacer does not pace. Not safe for concurrent use (one per task).
type pacer struct {
	clock Clock
	per   float64 // nanoseconds per target
	next  time.Time
}

func newPacer(c Clock, rate float64) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{clock: c, per: float64(time.Second) / rate}
}

// wait blocks until n more targets may be sent.
func (p *pacer) wait(ctx context.Context, n int) error {
	if p == nil || n <= 0 {
		return nil
	}
	now := p.clock.Now()
	if p.next.Before(now) {
		p.next = now
	}
	start := p.next
	p.next = p.next.Add(time.Duration(float64(n) * p.per))
	if d := start.Sub(now); d > 0 {
		return p.clock.Sleep(ctx, d)
	}
	return nil
}

// batchFor caps a batch so that a paced task hands the sender at most ~100 ms of its share at
// once: cancellation is checked per batch, so this keeps "stops within a second" true for
// slow pushes too.
func batchFor(batch int, rate float64) int {
	if rate <= 0 {
		return batch
	}
	if n := int(rate / 10); n < batch {
		return max(n, 1)
	}
	return batch
}
