package hms

import (
	"context"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/sender/gateway"
)

// TestHMSClientOutage: the simulator's scripted outage in each mode (503 with Retry-After,
// 81000001 internal error, a dropped connection, GOAWAY) is RETRY for the client; the send
// goes through once the outage ends. The token endpoint keeps working meanwhile.
func TestHMSClientOutage(t *testing.T) {
	s := newSim(t, sim.HMSConfig{})
	cl := newClient(t, s, "104455667", Config{})
	for _, o := range []sim.Outage{
		{Mode: sim.OutageStatus, Status: 503, RetryAfter: 3 * time.Second, For: time.Hour},
		{Mode: sim.OutageStatus, Status: 500, Reason: sim.HMSInternal, For: time.Hour},
		{Mode: sim.OutageDrop, For: time.Hour},
		{Mode: sim.OutageGoAway, For: time.Hour},
	} {
		if err := s.StartOutage(o); err != nil {
			t.Fatal(err)
		}
		r := cl.Send(context.Background(), delivery(notif, tok(0)))
		if r.Kind != gateway.KindRetry {
			t.Fatalf("outage %+v: %+v, want retry", o, r)
		}
		if o.RetryAfter > 0 && r.RetryAfter != o.RetryAfter {
			t.Fatalf("RetryAfter = %v, want %v", r.RetryAfter, o.RetryAfter)
		}
	}
	s.EndOutage()
	if r := cl.Send(context.Background(), delivery(notif, tok(0))); r.Kind != gateway.KindSent {
		t.Fatalf("after the outage: %+v", r)
	}
	if st := s.Stats(); st.Outage != 4 || st.Accepted != 1 {
		t.Fatalf("simulator: outage %d accepted %d", st.Outage, st.Accepted)
	}
}
