package sender

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pushd/pushd/sender/gateway"
)

// errDeadline ends a delivery that reached its deadline (expiration or retry horizon) while
// retrying, or that met a gateway down for longer than the retry horizon.
var errDeadline = errors.New("delivery deadline reached")

// gate is a pool's view of its gateway. It is up until Config.DownAfter consecutive replies
// are retryable (5xx, 429, timeouts, lost connections); it is then down: deliveries park in
// admit instead of sending, and one of them at a time is let through as a probe, the probes
// spaced by the backoff (or the gateway's Retry-After). The first probe that gets an answer
// other than "retry" brings the gateway up and releases every parked delivery. Parked
// deliveries hold their workers, so the pool's queue fills and Send blocks its caller: the
// fan-out stops scanning instead of spinning.
//
// The zero value is not usable: newPool sets changed.
type gate struct {
	// isDown mirrors down and fails counts the consecutive retryable replies, so that the
	// replies and attempts of a healthy pool take no lock.
	isDown atomic.Bool
	fails  atomic.Int64

	mu      sync.Mutex
	since   time.Time // when the first of the consecutive retryable replies came
	reason  string    // the last retryable reply's reason
	down    bool
	probing bool      // a probe is in flight
	step    int       // probes failed in this outage
	next    time.Time // earliest next probe while down
	// changed is cancelled whenever a probe ends or the gateway comes back: parked deliveries
	// wait on it. signal cancels it; a new one replaces it.
	changed context.Context
	signal  context.CancelFunc
}

func (g *gate) init() {
	g.changed, g.signal = context.WithCancel(context.Background())
}

// signalLocked wakes the parked deliveries; the caller holds g.mu.
func (g *gate) signalLocked() {
	g.signal()
	g.changed, g.signal = context.WithCancel(context.Background())
}

// admit returns once a delivery may be sent: at once while the gateway is up; while it is
// down, when the gateway comes back or this delivery becomes the probe (probe true: the caller
// must end it with record, or release when it does not send). It returns errDeadline when
// deadline (zero: none) passes first, or at once when the gateway has been down for longer
// than RetryHorizon (and no probe is due), and ctx's error when ctx ends first.
func (p *pool) admit(ctx context.Context, deadline time.Time) (probe bool, err error) {
	g := &p.gate
	if !g.isDown.Load() {
		return false, nil
	}
	parked, unbounded := false, false
	defer func() {
		if parked {
			p.m.parked.Dec()
		}
	}()
	for {
		now := p.cfg.now()
		g.mu.Lock()
		if !g.down {
			g.mu.Unlock()
			return false, nil
		}
		if !g.probing && !now.Before(g.next) {
			g.probing = true
			g.mu.Unlock()
			p.m.probes.Inc()
			return true, nil
		}
		if p.pastHorizonLocked(now) {
			g.mu.Unlock()
			return false, errDeadline
		}
		changed := g.changed
		wait := time.Duration(-1) // a probe is in flight: wait for its answer
		if !g.probing {
			wait = g.next.Sub(now)
		}
		g.mu.Unlock()
		untilDeadline := false
		if !deadline.IsZero() && !unbounded {
			if left := deadline.Sub(now); wait < 0 || left < wait {
				wait, untilDeadline = left, true
			}
		}
		unbounded = false
		if !parked {
			parked = true
			p.m.parked.Inc()
		}
		wctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(changed, cancel)
		if wait < 0 {
			<-wctx.Done()
		} else {
			err = p.cfg.sleep(wctx, wait)
		}
		stop()
		cancel()
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err != nil || wait < 0 {
			continue // woken by a change
		}
		if untilDeadline {
			if !p.cfg.now().Before(deadline) {
				return false, errDeadline
			}
			// Tests' sleeps may not move the clock: then wait for a change this time.
			unbounded = true
			continue
		}
		// Slept until the probe was due, and nothing changed meanwhile: be the probe. (Not a
		// clock comparison: tests run this with a clock that only their sleeps move.)
		g.mu.Lock()
		if g.down && !g.probing && g.changed == changed {
			g.probing = true
			g.mu.Unlock()
			p.m.probes.Inc()
			return true, nil
		}
		g.mu.Unlock()
	}
}

// release ends a probe that was not sent (its delivery ended first): another parked delivery
// takes its place.
func (p *pool) release() {
	g := &p.gate
	g.mu.Lock()
	if g.probing {
		g.probing = false
		g.signalLocked()
	}
	g.mu.Unlock()
}

// record tells the gate one gateway reply; probe says the request was the gate's probe.
func (p *pool) record(rep gateway.Reply, probe bool, now time.Time) {
	g := &p.gate
	if rep.Kind != gateway.KindRetry {
		if g.fails.Load() != 0 {
			g.fails.Store(0)
		}
		if !probe && !g.isDown.Load() {
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if probe {
			g.probing = false
		}
		if g.down {
			g.down = false
			g.isDown.Store(false)
			g.step = 0
			g.signalLocked()
			p.m.down.Dec()
			p.log.Warn("gateway answers again: parked deliveries resume",
				zap.Duration("down_for", now.Sub(g.since).Round(time.Millisecond)))
		}
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if probe {
		g.probing = false
	}
	fails := g.fails.Add(1)
	if fails == 1 {
		g.since = now
	}
	g.reason = rep.Reason
	switch {
	case g.down && probe:
		g.step++
		g.next = now.Add(max(p.backoff(g.step+1), rep.RetryAfter))
		g.signalLocked()
	case g.down:
		// A request sent before the gateway was found down: only a longer Retry-After counts.
		if at := now.Add(rep.RetryAfter); at.After(g.next) {
			g.next = at
			g.signalLocked()
		}
	case fails >= int64(p.cfg.DownAfter):
		g.down = true
		g.isDown.Store(true)
		g.step = 0
		g.next = now.Add(max(p.backoff(1), rep.RetryAfter))
		p.m.down.Inc()
		p.m.outages.Inc()
		p.log.Warn("gateway down: deliveries parked, one probe at a time until it answers",
			zap.String("reason", rep.Reason), zap.Int64("consecutive_failures", fails))
	}
}

// pastHorizon says whether the gateway has been down for RetryHorizon or longer at now.
func (p *pool) pastHorizon(now time.Time) bool {
	p.gate.mu.Lock()
	defer p.gate.mu.Unlock()
	return p.pastHorizonLocked(now)
}

// pastHorizonLocked is pastHorizon for a caller holding the gate's lock.
func (p *pool) pastHorizonLocked(now time.Time) bool {
	return p.gate.down && now.Sub(p.gate.since) >= p.cfg.RetryHorizon
}

// outageReason is the reason of the last retryable reply the gate saw.
func (p *pool) outageReason() string {
	p.gate.mu.Lock()
	defer p.gate.mu.Unlock()
	return p.gate.reason
}
