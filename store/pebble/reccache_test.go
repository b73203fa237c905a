package pebble

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// The record cache (reccache.go) never shows a reader what Pebble does not hold: every write
// path of a record (create fresh or checked, update, scheduled create, delete, sweep) and every
// count kept beside one (own channel, vendor receipts) is seen by the next read, and a store
// reopened on the same data (no cache) reads the same records as the one that wrote them.
func TestStoreRecordCacheFollowsEveryWrite(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := func(oid string) push.Notification {
		return push.Notification{ObjectID: oid, AppID: "app", NotificationID: "nid-" + oid, Status: push.StatusInQueue,
			CreatedAt: now, UpdatedAt: now, Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"x"}`)}
	}
	get := func(s *Store, oid string) push.Notification {
		t.Helper()
		n, err := s.GetNotification(ctx, "app", oid)
		if err != nil {
			t.Fatalf("GetNotification(%s): %v", oid, err)
		}
		return n
	}

	// Fresh records, then counts beside them: the cache knew they had none.
	for _, oid := range []string{"direct", "receipts", "updated", "deleted", "swept"} {
		if err := s.CreateNewNotificationNoSync(ctx, rec(oid)); err != nil {
			t.Fatal(err)
		}
		if n := get(s, oid); n.Counts != nil || n.Status != push.StatusInQueue {
			t.Fatalf("fresh record %s read back as %+v", oid, n)
		}
	}
	m := push.DirectMessage{AppID: "app", InstallationID: "d1", ID: "direct", Data: json.RawMessage(`{}`)}
	if out, _, err := s.CacheDirect(ctx, m, now, 10); err != nil || out != push.CacheStored {
		t.Fatalf("CacheDirect: %v %v", out, err)
	}
	if got := get(s, "direct").Counts[push.ChannelDirect].Sent; got != 1 {
		t.Errorf("own-channel sends of a cached fresh record = %d, want 1", got)
	}
	if n, err := s.CountReceipts(ctx, "app", "receipts", push.ChannelMi, []string{"r1", "r2"}, now); err != nil || n != 2 {
		t.Fatalf("CountReceipts: %d, %v", n, err)
	}
	if got := get(s, "receipts").Counts[push.ChannelMi].Arrivals; got != 2 {
		t.Errorf("receipt arrivals of a cached fresh record = %d, want 2", got)
	}

	// Update, delete, sweep; a checked create of an objectId freed by a delete.
	if _, err := s.UpdateNotification(ctx, "app", "updated", func(n *push.Notification) error {
		n.Status, n.Tasks = push.StatusInProcess, 3
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := get(s, "updated"); n.Status != push.StatusInProcess || n.Tasks != 3 {
		t.Errorf("updated record read back as status %s, %d tasks", n.Status, n.Tasks)
	}
	if err := s.DeleteNotification(ctx, "app", "deleted"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetNotification(ctx, "app", "deleted"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted record: %v, want ErrNotFound", err)
	}
	again := rec("deleted")
	again.NotificationID = "second"
	if err := s.CreateNotification(ctx, again); err != nil {
		t.Fatalf("create under a deleted record's objectId: %v", err)
	}
	if err := s.CreateNotification(ctx, again); !errors.Is(err, store.ErrExists) {
		t.Errorf("second create of the same objectId: %v, want ErrExists", err)
	}
	if _, err := s.UpdateNotification(ctx, "app", "swept", func(n *push.Notification) error {
		n.Status, n.UpdatedAt = push.StatusDone, now.Add(-90*24*time.Hour)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.deleteNotification("app", "swept", nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetNotification(ctx, "app", "swept"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("swept record: %v, want ErrNotFound", err)
	}
	sched := rec("scheduled")
	sched.Status = push.StatusScheduled
	if err := s.CreateScheduledNotification(ctx, sched, push.Scheduled{ID: 7, AppID: "app", DueAt: now.Add(time.Hour), CreatedAt: now}); err != nil {
		t.Fatal(err)
	}

	want := map[string]push.Notification{}
	for _, oid := range []string{"direct", "receipts", "updated", "deleted", "scheduled"} {
		want[oid] = get(s, oid)
	}
	s2 := closeReopen(t, s, dir)
	for oid, w := range want {
		got := get(s2, oid)
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Errorf("record %s from Pebble alone:\n%s\nthrough the cache:\n%s", oid, gj, wj)
		}
	}
	if _, err := s2.GetNotification(ctx, "app", "swept"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("swept record after reopening: %v, want ErrNotFound", err)
	}
}

// Counts written while the record is updated and read (own-channel sends under one stripe, the
// record's update under another) are never hidden by the cache: after everything, the record
// shows every send. Run with -race.
func TestStoreRecordCacheCountsRaceUpdates(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	const pushes, devices = 8, 20
	for i := range pushes {
		n := push.Notification{ObjectID: fmt.Sprint("p", i), AppID: "app", NotificationID: "nid", Status: push.StatusInProcess,
			CreatedAt: now, UpdatedAt: now, Kind: push.JobQuery, Data: json.RawMessage(`{}`)}
		if err := s.CreateNewNotificationNoSync(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range pushes {
		oid := fmt.Sprint("p", i)
		wg.Add(3)
		go func() {
			defer wg.Done()
			for d := range devices {
				m := push.DirectMessage{AppID: "app", InstallationID: fmt.Sprint("d", d), ID: oid, Data: json.RawMessage(`{}`)}
				if _, _, err := s.CacheDirect(ctx, m, now, 10); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range devices {
				if _, err := s.UpdateNotification(ctx, "app", oid, func(n *push.Notification) error {
					n.TasksDone++
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range devices {
				if _, err := s.GetNotification(ctx, "app", oid); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range pushes {
		n, err := s.GetNotification(ctx, "app", fmt.Sprint("p", i))
		if err != nil {
			t.Fatal(err)
		}
		if n.Counts[push.ChannelDirect].Sent != devices || n.TasksDone != devices {
			t.Errorf("record p%d: %d own-channel sends, %d updates; want %d of each", i, n.Counts[push.ChannelDirect].Sent, n.TasksDone, devices)
		}
	}
}

// The record cache stays within its bounds, in entries and in document bytes, whatever the
// documents' sizes, and its byte count is the sum of what it holds.
func TestStoreRecordCacheBounds(t *testing.T) {
	const entries, bytes = 64, 64 << 10
	c := newRecCache(entries, bytes)
	check := func(when string) {
		t.Helper()
		n, total := 0, 0
		for i := range c.shards {
			sh := &c.shards[i]
			sum := 0
			for _, e := range sh.m {
				sum += len(e.doc)
			}
			if sum != sh.bytes {
				t.Fatalf("%s: shard %d counts %d bytes, holds %d", when, i, sh.bytes, sum)
			}
			n += len(sh.m)
			total += sum
		}
		if n > entries || total > bytes {
			t.Fatalf("%s: %d records of %d bytes, bounds %d and %d", when, n, total, entries, bytes)
		}
	}
	for i := range 1000 {
		size := 100 + i%7*700 // 100 B to 4.3 KB
		c.put([]byte(fmt.Sprint("rec", i)), make([]byte, size), true)
		c.put([]byte(fmt.Sprint("rec", i/2)), make([]byte, size/2), false) // an update, maybe of a dropped one
		if i%3 == 0 {
			c.drop([]byte(fmt.Sprint("rec", i/3)))
		}
	}
	check("after puts, updates and drops")
	big := []byte("too-big")
	c.put(big, make([]byte, bytes/recCacheShards+1), true)
	if doc, _ := c.get(big); doc != nil {
		t.Errorf("a document larger than a shard's share was kept")
	}
	check("after a document too large")
	c.put([]byte("last"), []byte(`{"a":1}`), true)
	if doc, no := c.get([]byte("last")); string(doc) != `{"a":1}` || !no {
		t.Errorf("the last record put: %q, no counts %v", doc, no)
	}
}

// The cache keeps the records fan-out has still to read: a record written done or cancelled
// leaves it (and reads the same from Pebble), one in process stays.
func TestStoreRecordCacheKeepsPendingRecords(t *testing.T) {
	s, ctx, _ := storeWithRecords(t, push.StatusInQueue, "planned", "done", "cancelled")
	cached := func(oid string) bool {
		doc, _ := s.recs.get(notifKey(nil, "app", oid))
		return doc != nil
	}
	for _, c := range []struct {
		oid, status string
		kept        bool
	}{
		{"planned", push.StatusInProcess, true},
		{"done", push.StatusDone, false},
		{"cancelled", push.StatusCancelled, false},
	} {
		if !cached(c.oid) {
			t.Fatalf("record %s not cached once created", c.oid)
		}
		if err := s.ChangeNotification(ctx, "app", c.oid, func(n *push.Notification) error {
			n.Status, n.Tasks = c.status, 1
			return nil
		}, false); err != nil {
			t.Fatal(err)
		}
		if got := cached(c.oid); got != c.kept {
			t.Errorf("record %s written %s: cached %v, want %v", c.oid, c.status, got, c.kept)
		}
		got, err := s.GetNotification(ctx, "app", c.oid)
		if err != nil || got.Status != c.status || got.Tasks != 1 {
			t.Errorf("record %s written %s reads back as %s, %d tasks (%v)", c.oid, c.status, got.Status, got.Tasks, err)
		}
	}
}
