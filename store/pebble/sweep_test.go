package pebble

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

func TestStoreSweepNotifications(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	now := time.Now()
	day := 24 * time.Hour
	for i, age := range []time.Duration{10 * day, 8 * day, time.Hour} {
		n := push.Notification{ObjectID: string(rune('a' + i)), AppID: "app", NotificationID: "nid",
			Status: push.StatusDone, CreatedAt: now.Add(-age), UpdatedAt: now.Add(-age), Data: json.RawMessage(`{}`)}
		if err := s.CreateNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateNotification(ctx, push.Notification{ObjectID: "x", AppID: "other", Status: push.StatusDone, CreatedAt: now.Add(-30 * day)}); err != nil {
		t.Fatal(err)
	}
	cutoff := now.Add(-push.RecordRetention)
	if n, err := s.SweepNotifications(ctx, "app", cutoff, 1); err != nil || n != 1 {
		t.Fatalf("sweep limit 1 = %d, %v", n, err)
	}
	if _, err := s.GetNotification(ctx, "app", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the oldest record was not swept first: %v", err)
	}
	if n, err := s.SweepNotifications(ctx, "app", cutoff, 10); err != nil || n != 1 {
		t.Fatalf("sweep = %d, %v; want 1", n, err)
	}
	byNID, _ := s.NotificationsByNID(ctx, "app", "nid")
	if len(byNID) != 1 || byNID[0].ObjectID != "c" {
		t.Errorf("after sweep: %+v, want only c", byNID)
	}
	if _, err := s.GetNotification(ctx, "other", "x"); err != nil {
		t.Errorf("another app's record was swept: %v", err)
	}
}

// A record's 7 days run from when its push finished: records of unfinished pushes stay
// however old they are, and a finished one stays 7 days after its last update.
func TestStoreSweepNotificationsKeepsUnfinished(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	now := time.Now()
	day := 24 * time.Hour
	recs := []struct {
		id, status       string
		created, updated time.Duration // ago
		swept            bool
	}{
		{"scheduled", push.StatusScheduled, 20 * day, 20 * day, false}, // due in 10 days, scheduled 20 days before
		{"inqueue", push.StatusInQueue, 9 * day, 9 * day, false},
		{"inprocess", push.StatusInProcess, 30 * day, 8 * day, false},
		{"lateDone", push.StatusDone, 12 * day, 2 * day, false}, // finished 2 days ago
		{"oldDone", push.StatusDone, 12 * day, 8 * day, true},
		{"cancelled", push.StatusCancelled, 9 * day, 8 * day, true},
		{"recentDone", push.StatusDone, 6 * day, 6 * day, false},
	}
	for _, r := range recs {
		n := push.Notification{ObjectID: r.id, AppID: "app", NotificationID: r.id, Status: r.status,
			CreatedAt: now.Add(-r.created), UpdatedAt: now.Add(-r.updated), Data: json.RawMessage(`{}`)}
		if err := s.CreateNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	// limit 1 must not stall on the old unfinished records that sort first.
	total := 0
	for {
		n, err := s.SweepNotifications(ctx, "app", now.Add(-push.RecordRetention), 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if total != 2 {
		t.Errorf("swept %d records, want 2", total)
	}
	for _, r := range recs {
		_, err := s.GetNotification(ctx, "app", r.id)
		if gone := errors.Is(err, store.ErrNotFound); gone != r.swept {
			t.Errorf("%s: swept=%v (err %v), want swept=%v", r.id, gone, err, r.swept)
		}
		if byNID, _ := s.NotificationsByNID(ctx, "app", r.id); (len(byNID) == 0) != r.swept {
			t.Errorf("%s: notification_id index holds %d records after the sweep", r.id, len(byNID))
		}
	}
	// The scheduled one runs and finishes: 7 days later it goes.
	if _, err := s.UpdateNotification(ctx, "app", "scheduled", func(n *push.Notification) error {
		n.Status, n.UpdatedAt = push.StatusDone, now
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.SweepNotifications(ctx, "app", now.Add(-push.RecordRetention), 10); n != 0 {
		t.Errorf("a push finished now was swept")
	}
	if n, _ := s.SweepNotifications(ctx, "app", now.Add(time.Minute), 10); n != 3 {
		t.Errorf("7 days on, swept %d; want the 3 finished records", n)
	}
	listed := 0
	_ = s.ListNotifications(ctx, "app", func(*push.Notification) error { listed++; return nil })
	if listed != 2 {
		t.Errorf("%d records listed, want the 2 unfinished ones", listed)
	}
}

func TestStoreSweepReqIDs(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	t0 := time.Now()
	for _, id := range []string{"r1", "r2"} {
		if _, ok, err := s.ClaimReqID(ctx, "app", id, store.ReqClaim{ObjectID: "p", CreatedAt: t0}, time.Minute); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	if _, ok, err := s.ClaimReqID(ctx, "app", "r3", store.ReqClaim{ObjectID: "p", CreatedAt: t0}, time.Hour); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if n, err := s.SweepReqIDs(ctx, t0.Add(2*time.Minute), 100); err != nil || n != 2 {
		t.Fatalf("SweepReqIDs = %d, %v; want 2", n, err)
	}
	if prev, ok, _ := s.ClaimReqID(ctx, "app", "r3", store.ReqClaim{ObjectID: "q", CreatedAt: t0.Add(2 * time.Minute)}, time.Hour); ok || prev.ObjectID != "p" {
		t.Errorf("a live claim was swept")
	}
	var left int
	_ = s.iterate([]byte{tReqID}, []byte{tReqID + 1}, func(_, _ []byte) error { left++; return nil })
	if left != 1 {
		t.Errorf("%d claims left, want 1", left)
	}
}
