package api

import (
	"context"
	"testing"
	"time"

	"github.com/pushd/pushd/store"
)

func TestSweeperDeletesInactive(t *testing.T) {
	e := newEnv(t)
	old, _ := e.create(`{"deviceType":"android","installationId":"old","channels":["c"]}`)
	e.now = e.now.Add(60 * 24 * time.Hour)
	fresh, _ := e.create(`{"deviceType":"android","installationId":"fresh","channels":["c"]}`)
	// 91 days after the first write, 31 after the second.
	now := e.now.Add(31 * 24 * time.Hour)
	ticks := make(chan time.Time)
	w := NewSweeper(SweeperConfig{Now: func() time.Time { return now }, After: func(time.Duration) <-chan time.Time { return ticks }, Batch: 1}, e.st, nil, e.set)
	w.swept = make(chan int)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	if n := <-w.swept; n != 1 {
		t.Fatalf("first sweep deleted %d, want 1", n)
	}
	if r := e.do("GET", "/1.1/installations/"+old, "", e.appHeaders()...); r.Status != 404 {
		t.Fatalf("inactive installation still there: %d", r.Status)
	}
	if r := e.do("GET", "/1.1/installations/"+fresh, "", e.appHeaders()...); r.Status != 200 {
		t.Fatalf("active installation gone: %d", r.Status)
	}
	// Indexes went with it: the channel scan and the device id lookup no longer see it.
	n := 0
	for b := 0; b < 16; b++ {
		e.st.Scan(context.Background(), store.ScanRange{AppID: e.app.ID, Channel: "c", Bucket: b}, func(*store.Row) error { n++; return nil })
	}
	if n != 1 {
		t.Fatalf("channel index holds %d rows, want 1", n)
	}
	if _, err := e.st.LookupDevice(context.Background(), e.app.ID, "iid", "old"); err == nil {
		t.Fatal("device index still holds the deleted installation")
	}
	// Next tick, 60 more days: the second one goes too.
	now = now.Add(60 * 24 * time.Hour)
	ticks <- now
	if n := <-w.swept; n != 1 {
		t.Fatalf("second sweep deleted %d, want 1", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := e.set.GetOrCreateCounter(`pushd_sweeper_deleted_total`).Get(); got != 2 {
		t.Fatalf("deleted counter %d", got)
	}
}
