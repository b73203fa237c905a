package pebble

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// TestStoreSweepOffline: expired cached messages and done rows past their day go; a cached
// message without expiry and a fresh done row stay.
func TestStoreSweepOffline(t *testing.T) {
	s, ctx, now := storeWithRecords(t, push.StatusInProcess, "keep", "exp", "acked")
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

// ChangeNotification writes what UpdateNotification writes (synced or not), without the
// counts kept beside the record in a result it does not return: they stay beside it, and
// GetNotification still adds them.
func TestStoreChangeNotification(t *testing.T) {
	s, ctx, now := storeWithRecords(t, push.StatusInQueue, "p")
	if out, _, err := s.CacheDirect(ctx, push.DirectMessage{AppID: "app", InstallationID: "d1", ID: "p", Data: json.RawMessage(`{}`)}, now, 10); err != nil || out != push.CacheStored {
		t.Fatalf("CacheDirect: %v %v", out, err)
	}
	before, err := s.GetNotification(ctx, "app", "p")
	if err != nil {
		t.Fatal(err)
	}
	if before.Counts.Total().Equal(push.Tally{}) {
		t.Fatal("no own-channel counts beside the record: the test would show nothing")
	}
	for i, sync := range []bool{true, false} {
		err := s.ChangeNotification(ctx, "app", "p", func(n *push.Notification) error {
			n.Tasks = i + 1
			n.Status = push.StatusInProcess
			return nil
		}, sync)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetNotification(ctx, "app", "p")
		if err != nil {
			t.Fatal(err)
		}
		if got.Tasks != i+1 || got.Status != push.StatusInProcess || !got.Counts.Total().Equal(before.Counts.Total()) {
			t.Errorf("sync %v: tasks %d, status %s, counts %+v; want %d, in process, %+v", sync, got.Tasks, got.Status, got.Counts.Total(), i+1, before.Counts.Total())
		}
	}
	stop := errors.New("stop")
	if err := s.ChangeNotification(ctx, "app", "p", func(n *push.Notification) error { n.Tasks = 99; return stop }, true); !errors.Is(err, stop) {
		t.Errorf("fn's error: got %v", err)
	}
	if got, _ := s.GetNotification(ctx, "app", "p"); got.Tasks != 2 {
		t.Errorf("a change fn refused was written: tasks %d", got.Tasks)
	}
	if err := s.ChangeNotification(ctx, "app", "missing", func(*push.Notification) error { return nil }, true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing record: got %v, want ErrNotFound", err)
	}
}

// storeWithRecords opens a store holding a push record of app "app" with each of ids, in
// status, created now.
func storeWithRecords(t *testing.T, status string, ids ...string) (*Store, context.Context, time.Time) {
	t.Helper()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	now := time.Now()
	for _, id := range ids {
		n := push.Notification{ObjectID: id, AppID: "app", NotificationID: "nid", Status: status, CreatedAt: now.UTC(), UpdatedAt: now.UTC(), Kind: push.JobQuery, Data: json.RawMessage(`{}`)}
		if err := s.CreateNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	return s, ctx, now
}
