package sender

import (
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// TestSenderVivoQuotaDefers: with SetDeferQuota (fan-out keeps deferred targets in the store),
// vivo's 10070 ends the deliveries past the quota at once as deferred with vivo's reason,
// without waiting for the reset and without calling vivo again while its quota is spent; the
// accepted ones are sent, each regId once.
func TestSenderVivoQuotaDefers(t *testing.T) {
	e := newVivoEnv(t, sim.VivoConfig{DayQuota: 25}, func(c *Config) { c.Workers = 1 })
	e.d.SetDeferQuota()
	start := e.clock.now()
	res := send(t, e.d, vivoDeliveries(60, time.Time{}))
	sent, deferred := 0, 0
	for i, r := range res {
		switch {
		case r.Outcome == push.OutcomeSent:
			sent++
		case r.Outcome == push.OutcomeDeferred && strings.Contains(r.Reason, "10070"):
			deferred++
		default:
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	if sent != 25 || deferred != 35 {
		t.Fatalf("%d sent, %d deferred; want 25 (the day quota) and 35", sent, deferred)
	}
	if e.clock.now().Sub(start) >= time.Hour {
		t.Fatalf("the dispatcher waited %s: a deferral must not wait for the reset", e.clock.now().Sub(start))
	}
	before := e.sim.Stats().Requests
	res = send(t, e.d, vivoDeliveries(10, time.Time{}))
	for i, r := range res {
		if r.Outcome != push.OutcomeDeferred {
			t.Fatalf("delivery %d while parked: %+v, want deferred", i, r)
		}
	}
	if n := e.sim.Stats().Requests - before; n != 0 {
		t.Fatalf("%d requests while the quota was spent, want 0", n)
	}
}
