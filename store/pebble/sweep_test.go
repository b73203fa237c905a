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
	for i, age := range []time.Duration{10 * 24 * time.Hour, 8 * 24 * time.Hour, time.Hour} {
		n := push.Notification{ObjectID: string(rune('a' + i)), AppID: "app", NotificationID: "nid",
			CreatedAt: now.Add(-age), Data: json.RawMessage(`{}`)}
		if err := s.CreateNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateNotification(ctx, push.Notification{ObjectID: "x", AppID: "other", CreatedAt: now.Add(-30 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	cutoff := now.Add(-7 * 24 * time.Hour)
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
