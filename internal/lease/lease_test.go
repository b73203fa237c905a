package lease

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/store/pebble"
)

// clock is a test clock every keeper of a test shares.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func hasMetric(t *testing.T, set *metrics.Set, line string) {
	t.Helper()
	var b bytes.Buffer
	set.WritePrometheus(&b)
	if !strings.Contains(b.String(), line+"\n") {
		t.Errorf("metrics lack %q:\n%s", line, b.String())
	}
}

func TestLeaseKeeperTakeOverAfterPauseAndRelease(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	cfg := Config{TTL: 10 * time.Second, Renew: 3 * time.Second}
	set1, set2 := metrics.NewSet(), metrics.NewSet()
	k1 := New("scheduler", "n1", cfg, st, zap.NewNop(), set1, clk.Now)
	k2 := New("scheduler", "n2", cfg, st, zap.NewNop(), set2, clk.Now)
	ctx := context.Background()

	k1.Step(ctx)
	k2.Step(ctx)
	l1, ok := k1.Held()
	if !ok || l1.Epoch != 1 || l1.Owner != "n1" {
		t.Fatalf("n1 Held = %+v, %v; want epoch 1", l1, ok)
	}
	if _, ok := k2.Held(); ok {
		t.Fatal("both nodes hold the lease")
	}
	hasMetric(t, set1, `pushd_lease_held{lease="scheduler"} 1`)
	hasMetric(t, set1, `pushd_lease_epoch{lease="scheduler"} 1`)
	hasMetric(t, set1, `pushd_lease_acquisitions_total{lease="scheduler"} 1`)
	hasMetric(t, set2, `pushd_lease_held{lease="scheduler"} 0`)

	// Renewed on time, n1 keeps it past its first TTL.
	clk.Advance(3 * time.Second)
	k1.Step(ctx)
	clk.Advance(8 * time.Second)
	k2.Step(ctx)
	if _, ok := k1.Held(); !ok {
		t.Fatal("n1 lost a lease it renewed")
	}
	if _, ok := k2.Held(); ok {
		t.Fatal("n2 took a renewed lease")
	}

	// n1 pauses (no renewal) past the TTL: by its own clock it holds nothing, and n2 takes
	// the lease with the next epoch.
	clk.Advance(10 * time.Second)
	if _, ok := k1.Held(); ok {
		t.Error("n1 holds an expired lease")
	}
	k2.Step(ctx)
	l2, ok := k2.Held()
	if !ok || l2.Epoch != 2 {
		t.Fatalf("n2 Held = %+v, %v; want epoch 2", l2, ok)
	}
	k1.Step(ctx) // wakes up: counts the loss, and cannot take it back
	if _, ok := k1.Held(); ok {
		t.Fatal("n1 took back a lease n2 holds")
	}
	hasMetric(t, set1, `pushd_lease_lost_total{lease="scheduler"} 1`)

	// n2 stops: it releases the lease, and n1 takes it at once, with the next epoch.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- k2.Run(runCtx) }()
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := k2.Held(); ok {
		t.Error("n2 holds the lease after its stop")
	}
	k1.Step(ctx)
	if l, ok := k1.Held(); !ok || l.Epoch != 3 {
		t.Fatalf("n1 after n2's release: Held = %+v, %v; want epoch 3", l, ok)
	}
}

func TestLeaseConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{TTL: 10 * time.Second, Renew: 5 * time.Second}, true},
		{Config{TTL: 10 * time.Second, Renew: 6 * time.Second}, false},
		{Config{TTL: 4 * time.Second}, false}, // default renew 5s
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v, want ok %v", tc.cfg, err, tc.ok)
		}
	}
}
