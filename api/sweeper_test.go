package api

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
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
	w.swept = make(chan Swept)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	if s := <-w.swept; s.Installations != 1 {
		t.Fatalf("first sweep deleted %d installations, want 1", s.Installations)
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
	if s := <-w.swept; s.Installations != 1 {
		t.Fatalf("second sweep deleted %d installations, want 1", s.Installations)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := e.set.GetOrCreateCounter(`pushd_sweeper_deleted_total`).Get(); got != 2 {
		t.Fatalf("deleted counter %d", got)
	}
}

// Push records go 7 days after their push finished, in batches, app by app; records of
// pushes not finished (scheduled far ahead, still sending) stay however old.
func TestSweeperRemovesFinishedPushRecordsAfterSevenDays(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	day := 24 * time.Hour
	now := e.now
	recs := []struct {
		id, status       string
		created, updated time.Duration // before now
		swept            bool
	}{
		{"old1", push.StatusDone, 9 * day, 8 * day, true},
		{"old2", push.StatusDone, 8 * day, 8 * day, true},
		{"old3", push.StatusCancelled, 10 * day, 10 * day, true},
		{"recent", push.StatusDone, 6 * day, 6 * day, false},
		{"lateDone", push.StatusDone, 20 * day, 1 * day, false}, // scheduled 20 days ago, sent yesterday
		{"scheduled", push.StatusScheduled, 10 * day, 10 * day, false},
		{"inProcess", push.StatusInProcess, 8 * day, 8 * day, false},
	}
	for _, r := range recs {
		n := push.Notification{ObjectID: r.id, AppID: e.app.ID, NotificationID: r.id, Status: r.status,
			CreatedAt: now.Add(-r.created), UpdatedAt: now.Add(-r.updated), Data: json.RawMessage(`{}`)}
		if err := e.st.CreateNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	ticks := make(chan time.Time)
	w := NewSweeper(SweeperConfig{Now: func() time.Time { return now }, After: func(time.Duration) <-chan time.Time { return ticks }, Batch: 2}, e.st, nil, e.set)
	w.swept = make(chan Swept)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	if s := <-w.swept; s.Records != 3 || s.Installations != 0 {
		t.Fatalf("first sweep: %+v, want 3 records", s)
	}
	for _, r := range recs {
		_, err := e.st.GetNotification(ctx, e.app.ID, r.id)
		if gone := errors.Is(err, store.ErrNotFound); gone != r.swept {
			t.Errorf("%s: gone=%v (%v), want %v", r.id, gone, err, r.swept)
		}
	}
	// Six days on: lateDone is 7 days past its finish; recent is 12 days old.
	now = now.Add(6*day + time.Minute)
	ticks <- now
	if s := <-w.swept; s.Records != 2 {
		t.Fatalf("second sweep: %+v, want 2 records", s)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	left := 0
	_ = e.st.ListNotifications(ctx, e.app.ID, func(n *push.Notification) error {
		left++
		if n.Finished() {
			t.Errorf("finished record %s left", n.ObjectID)
		}
		return nil
	})
	if left != 2 {
		t.Errorf("%d records left, want the 2 unfinished", left)
	}
	if got := e.set.GetOrCreateCounter(`pushd_sweeper_records_deleted_total`).Get(); got != 5 {
		t.Fatalf("records counter %d, want 5", got)
	}
}
