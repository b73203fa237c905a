package mi

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/sender/gateway"
)

// TestMiRegIDWithCommaAddressesNoOne: a stored regId holding a comma (one imported before
// intake refused them) fails alone; it never reaches Xiaomi, so it cannot address the
// device whose regId follows the comma, and the batch's other regIds are sent.
func TestMiRegIDWithCommaAddressesNoOne(t *testing.T) {
	s := newSim(t, sim.MiConfig{Record: 10})
	cl := newClient(t, s, s.NewApp(pkg), Config{})
	ids := []string{regID(1), regID(2) + "," + regID(9), "", regID(3)}
	out := make([]gateway.Reply, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = cl.Send(context.Background(), delivery(notif, id)) }()
	}
	wg.Wait()
	for i, r := range out {
		bad := i == 1 || i == 2
		if bad && (r.Kind != gateway.KindFailed || !strings.Contains(r.Reason, "comma")) {
			t.Fatalf("regId %q: %+v, want failed naming the comma", ids[i], r)
		}
		if !bad && r.Kind != gateway.KindSent {
			t.Fatalf("regId %q: %+v", ids[i], r)
		}
	}
	st := s.Stats()
	if st.PerToken[regID(9)] != 0 || st.PerToken[regID(2)] != 0 || st.Accepted != 2 {
		t.Fatalf("per regId %v, accepted %d: want only %s and %s", st.PerToken, st.Accepted, regID(1), regID(3))
	}
	for _, sent := range s.Sent() {
		if strings.Contains(sent.Target, regID(9)) {
			t.Fatalf("a request named %s: %q", regID(9), sent.Target)
		}
	}
}
