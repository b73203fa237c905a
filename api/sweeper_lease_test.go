package api

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A sweeper whose node does not hold the sweeper's lease skips its sweeps, and sweeps once the
// node holds it.
func TestSweeperSweepsOnlyUnderTheLease(t *testing.T) {
	e := newEnv(t)
	old, _ := e.create(`{"deviceType":"android","installationId":"old"}`)
	now := e.now.Add(91 * 24 * time.Hour)
	ticks := make(chan time.Time)
	var leader atomic.Bool
	w := NewSweeper(SweeperConfig{Now: func() time.Time { return now }, After: func(time.Duration) <-chan time.Time { return ticks },
		Leader: leader.Load}, e.st, nil, e.set)
	w.swept = make(chan Swept)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	skipped := func() {
		t.Helper()
		select {
		case ticks <- now:
		case s := <-w.swept:
			t.Fatalf("a sweeper without the lease swept: %+v", s)
		}
	}
	skipped() // the first round was skipped, and waited for this tick
	skipped() // so was the second
	if r := e.do("GET", "/1.1/installations/"+old, "", e.appHeaders()...); r.Status != 200 {
		t.Fatalf("a sweeper without the lease deleted an installation: %d", r.Status)
	}
	leader.Store(true)
	// The sweeper may see the lease before its next tick (it re-checks after the last skipped
	// one): it then sweeps without waiting for a tick.
	var s Swept
	select {
	case ticks <- now:
		s = <-w.swept
	case s = <-w.swept:
	}
	if s.Installations != 1 {
		t.Fatalf("the lease holder's sweep deleted %d installations, want 1", s.Installations)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
