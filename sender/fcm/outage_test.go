package fcm

import (
	"context"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/sender/gateway"
)

// Every way a gateway outage shows (503, a dropped connection, a GOAWAY, 429 with Retry-After)
// is a retry with a stable reason; the client sends again once the gateway is back.
func TestFCMClientOutageReplies(t *testing.T) {
	s := newSim(t, sim.FCMConfig{})
	cl := newClient(t, s, "demo-chat")
	if r := cl.Send(context.Background(), delivery(regToken(0))); r.Kind != gateway.KindSent {
		t.Fatalf("before the outage: %+v", r)
	}
	cases := []struct {
		outage sim.Outage
		want   gateway.Reply
	}{
		{sim.Outage{Mode: sim.OutageStatus}, gateway.Reply{Kind: gateway.KindRetry, Reason: ErrUnavailable}},
		{sim.Outage{Mode: sim.OutageDrop}, gateway.Reply{Kind: gateway.KindRetry, Reason: "fcm connection lost"}},
		{sim.Outage{Mode: sim.OutageGoAway}, gateway.Reply{Kind: gateway.KindRetry, Reason: ErrUnavailable}},
		{sim.Outage{Mode: sim.OutageStatus, Status: 429, RetryAfter: 3 * time.Second}, gateway.Reply{Kind: gateway.KindRetry, Reason: ErrQuotaExceeded, RetryAfter: 3 * time.Second}},
	}
	for _, c := range cases {
		t.Run(string(c.outage.Mode), func(t *testing.T) {
			c.outage.For = time.Hour
			if err := s.StartOutage(c.outage); err != nil {
				t.Fatal(err)
			}
			for i := range 2 { // the second on the connection the first left
				if r := cl.Send(context.Background(), delivery(regToken(0))); r != c.want {
					t.Fatalf("attempt %d: got %+v, want %+v", i, r, c.want)
				}
			}
			s.EndOutage()
			if r := cl.Send(context.Background(), delivery(regToken(0))); r.Kind != gateway.KindSent {
				t.Fatalf("after the outage: %+v", r)
			}
		})
	}
}
