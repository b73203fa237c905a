package sender

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store/pebble"
)

// sentWithin says how many of n deliveries a node sent within d of the start: the clock
// stands still while it sends, so each wait a pool asked for is when that delivery goes out,
// and a delivery that did not wait went out at once.
func (e *env) sentWithin(n int, d time.Duration) int {
	e.sl.mu.Lock()
	defer e.sl.mu.Unlock()
	sent := n - len(e.sl.ds)
	for _, w := range e.sl.ds {
		if w <= d {
			sent++
		}
	}
	return sent
}

// rateNodes starts n sending nodes (dispatchers with their own clocks and pools) whose
// memberships share one Pebble store, and registers each twice so that all see n live.
func rateNodes(t *testing.T, n int, shared bool, tune func(*Config)) []*env {
	t.Helper()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	start := time.Now()
	var (
		nodes []*env
		ms    []*Membership
	)
	for i := range n {
		m := NewMembership(st, fmt.Sprintf("node-%d", i), 0, func() time.Time { return start }, nil, nil, nil)
		e := newEnv(t, func(c *Config) {
			c.Burst = 1
			if shared {
				c.Share = m.Share
			}
			tune(c)
		}, sim.APNsConfig{})
		nodes, ms = append(nodes, e), append(ms, m)
	}
	for range 2 {
		for _, m := range ms {
			if err := m.Beat(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, m := range ms {
		if got := m.Share(); got != 1/float64(n) {
			t.Fatalf("share %v with %d nodes registered, want 1/%d", got, n, n)
		}
	}
	return nodes
}

// sendTotalWithin sends per deliveries through each node and says how many went out within
// one second, across all nodes.
func sendTotalWithin(t *testing.T, nodes []*env, per int) int {
	t.Helper()
	total := 0
	for _, e := range nodes {
		ds := make([]push.Delivery, per)
		for i := range ds {
			ds[i] = apnsDelivery("app1", i)
		}
		for i, r := range send(t, e.d, ds) {
			if r.Outcome != push.OutcomeSent {
				t.Fatalf("delivery %d: %+v", i, r)
			}
		}
		total += e.sentWithin(per, time.Second)
	}
	return total
}

// TestSenderRateSharedAcrossNodes: two sending nodes registered in one store share the
// configured rate of (app, channel): together they send at most rate per second (plus one
// burst token each), measured on their injected clocks.
func TestSenderRateSharedAcrossNodes(t *testing.T) {
	const rate = 100
	nodes := rateNodes(t, 2, true, func(c *Config) { c.Rates = map[string]float64{"app1/apns": rate} })
	got := sendTotalWithin(t, nodes, 150)
	if got > rate+len(nodes) {
		t.Fatalf("two nodes sent %d deliveries in the first second, want at most %d (rate %d/s shared, one burst token each)", got, rate+len(nodes), rate)
	}
	if got < rate-len(nodes) {
		t.Fatalf("two nodes sent %d deliveries in the first second, want about %d: the share is too small", got, rate)
	}
}

// TestSenderRateOfTheApp: the rate stored with the app (settings.senderRates) wins over the
// node's --sender-rates, and is shared by the nodes as well.
func TestSenderRateOfTheApp(t *testing.T) {
	const rate = 40
	nodes := rateNodes(t, 2, true, func(c *Config) { c.Rates = map[string]float64{"apns": 1000} })
	for _, e := range nodes {
		e.apps.mu.Lock()
		app := e.apps.m["app1"]
		app.Settings.SenderRates = push.ChannelRates{APNs: rate}
		e.apps.m["app1"] = app
		e.apps.mu.Unlock()
	}
	got := sendTotalWithin(t, nodes, 100)
	if got > rate+len(nodes) || got < rate-len(nodes) {
		t.Fatalf("two nodes sent %d deliveries in the first second, want about %d (the app's rate, shared)", got, rate)
	}
}

type memberFunc func(ctx context.Context, group, member string, now time.Time, ttl time.Duration) (int, error)

func (f memberFunc) RegisterMember(ctx context.Context, group, member string, now time.Time, ttl time.Duration) (int, error) {
	return f(ctx, group, member, now, ttl)
}

// TestSenderMembershipRun: Run heartbeats every ttl/3 on its sleep hook; a failed heartbeat
// is counted and keeps the last share.
func TestSenderMembershipRun(t *testing.T) {
	answers := []error{nil, errors.New("store down"), nil}
	lives := []int{3, 0, 2}
	beat := 0
	st := memberFunc(func(_ context.Context, group, member string, _ time.Time, ttl time.Duration) (int, error) {
		if group != MemberGroup || member != "n1" || ttl != 30*time.Second {
			t.Errorf("RegisterMember(%s, %s, ttl %s)", group, member, ttl)
		}
		i := beat
		beat++
		return lives[i], answers[i]
	})
	set := metrics.NewSet()
	ctx, cancel := context.WithCancel(context.Background())
	var shares []float64
	var waits []time.Duration
	var m *Membership
	m = NewMembership(st, "n1", 30*time.Second, nil, func(ctx context.Context, d time.Duration) error {
		shares, waits = append(shares, m.Share()), append(waits, d)
		if len(waits) == len(answers) {
			cancel()
		}
		return ctx.Err()
	}, nil, set)
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1.0 / 3, 1.0 / 3, 0.5}; !slices.Equal(shares, want) {
		t.Fatalf("shares after each heartbeat %v, want %v (a failed one keeps the last)", shares, want)
	}
	for _, w := range waits {
		if w != 10*time.Second {
			t.Fatalf("heartbeat waits %v, want ttl/3", waits)
		}
	}
	if got := set.GetOrCreateCounter(`pushd_sender_heartbeat_errors_total`).Get(); got != 1 {
		t.Fatalf("heartbeat errors %d, want 1", got)
	}
}
