package mi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/sender/gateway"
)

// TestMiClientOutage: the simulator's scripted outage in each mode (503 with Retry-After, a
// dropped connection, GOAWAY) is RETRY for the client, and its quota code as the outage's
// answer is QUOTA; the send goes through once the outage ends.
func TestMiClientOutage(t *testing.T) {
	s := newSim(t, sim.MiConfig{})
	cl := newClient(t, s, s.NewApp(pkg), Config{})
	for _, c := range []struct {
		o    sim.Outage
		want gateway.Kind
	}{
		{sim.Outage{Mode: sim.OutageStatus, Status: 503, RetryAfter: 3 * time.Second, For: time.Hour}, gateway.KindRetry},
		{sim.Outage{Mode: sim.OutageStatus, Reason: fmt.Sprint(sim.MiDefaultQuotaCode), For: time.Hour}, gateway.KindQuota},
		{sim.Outage{Mode: sim.OutageDrop, For: time.Hour}, gateway.KindRetry},
		{sim.Outage{Mode: sim.OutageGoAway, For: time.Hour}, gateway.KindRetry},
	} {
		if err := s.StartOutage(c.o); err != nil {
			t.Fatal(err)
		}
		r := cl.Send(context.Background(), delivery(notif, regID(0)))
		if r.Kind != c.want {
			t.Fatalf("outage %+v: %+v, want %v", c.o, r, c.want)
		}
		if c.o.RetryAfter > 0 && r.RetryAfter != c.o.RetryAfter {
			t.Fatalf("RetryAfter = %v, want %v", r.RetryAfter, c.o.RetryAfter)
		}
	}
	s.EndOutage()
	if r := cl.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindSent {
		t.Fatalf("after the outage: %+v", r)
	}
	if st := s.Stats(); st.Outage != 4 || st.Accepted != 1 {
		t.Fatalf("simulator: outage %d accepted %d", st.Outage, st.Accepted)
	}
}
