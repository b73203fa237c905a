package pebble

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// TestStoreSweepOffline: expired cached messages and done rows past their day go; a cached
// message without expiry and a fresh done row stay.
func TestStoreSweepOffline(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	now := time.Now()
	for _, id := range []string{"keep", "exp", "acked"} {
		n := push.Notification{ObjectID: id, AppID: "app", NotificationID: "nid", Status: push.StatusInProcess, CreatedAt: now.UTC(), UpdatedAt: now.UTC(), Kind: push.JobQuery, Data: json.RawMessage(`{}`)}
		if err := s.CreateNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	put := func(iid, id string, exp time.Time) {
		m := push.DirectMessage{AppID: "app", InstallationID: iid, ID: id, Data: json.RawMessage(`{}`)}
		if !exp.IsZero() {
			m.Expires = exp.UnixMilli()
		}
		if out, _, err := s.CacheDirect(ctx, m, now, 10); err != nil || out != push.CacheStored {
			t.Fatalf("CacheDirect(%s): %v %v", id, out, err)
		}
	}
	put("d1", "keep", time.Time{})
	put("d2", "exp", now.Add(time.Minute))
	put("d3", "acked", time.Time{})
	if _, err := s.AckDirect(ctx, "app", "d3", []string{"acked"}, now); err != nil {
		t.Fatal(err)
	}
	if n, err := s.SweepOffline(ctx, now.Add(time.Hour), 100); err != nil || n != 1 {
		t.Fatalf("sweep after an hour: %d, %v; want 1 (the expired message)", n, err)
	}
	if n, err := s.SweepOffline(ctx, now.Add(store.DirectAckedKeep+time.Minute), 100); err != nil || n != 1 {
		t.Fatalf("sweep after a day: %d, %v; want 1 (the done row)", n, err)
	}
	ms, err := s.OfflineMessages(ctx, "app", "d1", now.Add(48*time.Hour))
	if err != nil || len(ms) != 1 || ms[0].ID != "keep" {
		t.Errorf("the message without expiry: %+v, %v", ms, err)
	}
	rows, err := s.offlineRows("app", "d2")
	if err != nil || len(rows) != 0 {
		t.Errorf("rows of d2 left: %d, %v", len(rows), err)
	}
}
