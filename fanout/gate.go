package fanout

import (
	"context"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// Intake says whether the node's REST API has intake requests in hand (api.InFlight: every
// method but GET and HEAD). On a node that runs both, fan-out and the API share the cores: while
// such requests are in hand, at most
// WorkerConfig.BusyTasks of fan-out's goroutines work at once, so that accepting a push is not
// queued behind every planner and task (docs/decisions.md, "Fan-out gives way to intake").
type Intake interface{ Busy() bool }

// SetIntake gives the worker the node's intake; call it before Run. Without one (a fan-out
// node, a test) every task runs at once, up to Concurrency.
func (w *Worker) SetIntake(in Intake) {
	if in != nil && w.cfg.BusyTasks > 0 {
		w.gate = &cpuGate{intake: in, tokens: make(chan struct{}, w.cfg.BusyTasks), waits: w.m.intakeWaits}
	}
}

// cpuGate returns the worker's gate (nil: none), for the planner that runs its tasks.
func (w *Worker) cpuGate() *cpuGate { return w.gate }

// busyRecheck is how often a goroutine waiting for a token looks whether the API went idle.
const busyRecheck = time.Millisecond

// cpuGate hands out BusyTasks tokens to fan-out's goroutines: a planner planning a job, a
// task's goroutine (its reads, its sends' preparation, its completion), a task's scan. Each takes
// one whenever one is free, and works without one only while the API is idle: so while the API
// is busy, only token holders work. Each gives its token back whenever it waits on a channel (the
// scan for a free batch or for the send side, the send side for the scan or the gateway), so a
// task waiting on a gateway holds no one up.
type cpuGate struct {
	intake Intake
	tokens chan struct{}
	waits  *metrics.Counter // waits for a token while the API was busy (pushd_fanout_intake_waits_total)
}

// gateHold is one goroutine's place at the gate. Its methods do nothing on a nil hold or a hold
// without a gate.
type gateHold struct {
	g     *cpuGate
	token bool
}

// enter returns once h may work: at once with a free token, or without one while the API is
// idle; else it waits for a token.
func (h *gateHold) enter(ctx context.Context) error {
	if h == nil || h.g == nil || h.token {
		return nil
	}
	g := h.g
	select {
	case g.tokens <- struct{}{}:
		h.token = true
		return nil
	default:
	}
	if !g.intake.Busy() {
		return nil
	}
	g.waits.Inc()
	t := time.NewTimer(busyRecheck)
	defer t.Stop()
	for {
		select {
		case g.tokens <- struct{}{}:
			h.token = true
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if !g.intake.Busy() {
				return nil
			}
			t.Reset(busyRecheck)
		}
	}
}

// yield is enter for a task already working: one that works without a token waits for one
// once the API is busy.
func (h *gateHold) yield(ctx context.Context) error {
	if h == nil || h.g == nil || h.token || !h.g.intake.Busy() {
		return nil
	}
	return h.enter(ctx)
}

// sibling returns a hold at the same gate, for another goroutine of the same task.
func (h *gateHold) sibling() *gateHold {
	if h == nil {
		return nil
	}
	return &gateHold{g: h.g}
}

// leave gives h's token back, if it holds one.
func (h *gateHold) leave() {
	if h == nil || !h.token {
		return
	}
	h.token = false
	<-h.g.tokens
}
