package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/lease"
)

// Two re-drivers of two nodes on one store: only the holder of the scheduler's lease appends a
// lost job, so it goes out once, not once per scheduler node.
func TestRedriverRedrivesOnlyUnderTheLease(t *testing.T) {
	e := newEnv(t, t.TempDir())
	ctx := context.Background()
	e.pendingRecord(t, "app1", "rec1")
	clock := func() time.Time { return e.now }
	var rs []*Redriver
	var ks []*lease.Keeper
	for _, owner := range []string{"n1", "n2"} {
		k := lease.New("scheduler", owner, lease.Config{}, e.st, zap.NewNop(), metrics.NewSet(), clock)
		k.Step(ctx)
		ks = append(ks, k)
		rs = append(rs, NewRedriver(RedriveConfig{After: time.Minute}, e.st, e.log, k, zap.NewNop(), metrics.NewSet(), clock))
	}
	e.now = e.now.Add(2 * time.Minute) // the record is overdue, and n1's lease has run out
	ks[1].Step(ctx)                    // n2 takes the lease
	n1, err := rs[0].Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := rs[1].Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n1 != 0 || n2 != 1 {
		t.Fatalf("re-drove %d on n1 (lease lost) and %d on n2 (holder); want 0 and 1", n1, n2)
	}
}

// A scheduler whose node does not hold the lease fires nothing.
func TestSchedulerFiresNothingWithoutTheLease(t *testing.T) {
	e := newEnv(t, t.TempDir())
	ctx := context.Background()
	e.schedule(t, "app1", e.now.Add(-time.Minute))
	clock := func() time.Time { return e.now }
	other := lease.New("scheduler", "other", lease.Config{}, e.st, zap.NewNop(), metrics.NewSet(), clock)
	other.Step(ctx)
	k := lease.New("scheduler", "me", lease.Config{}, e.st, zap.NewNop(), metrics.NewSet(), clock)
	k.Step(ctx)
	s := New(Config{}, e.st, e.log, k, zap.NewNop(), metrics.NewSet(), clock)
	if n, err := s.Tick(ctx); err != nil || n != 0 {
		t.Fatalf("fired %d (err %v) without the lease, want 0", n, err)
	}
	so := New(Config{}, e.st, e.log, other, zap.NewNop(), metrics.NewSet(), clock)
	if n, err := so.Tick(ctx); err != nil || n != 1 {
		t.Fatalf("the holder fired %d (err %v), want 1", n, err)
	}
}
