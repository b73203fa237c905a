package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

func directMsg(app, iid, id string, exp time.Time) push.DirectMessage {
	m := push.DirectMessage{AppID: app, InstallationID: iid, ID: id, NotificationID: "nid", Data: json.RawMessage(`{"alert":"` + id + `"}`)}
	if !exp.IsZero() {
		m.Expires = exp.UnixMilli()
	}
	return m
}

func offlineIDs(t *testing.T, s store.Store, app, iid string, now time.Time) []string {
	t.Helper()
	ms, err := s.OfflineMessages(bg, app, iid, now)
	if err != nil {
		t.Fatalf("OfflineMessages: %v", err)
	}
	var ids []string
	for _, m := range ms {
		if m.AppID != app || m.InstallationID != iid || string(m.Data) != `{"alert":"`+m.ID+`"}` {
			t.Fatalf("OfflineMessages gave %+v", m)
		}
		ids = append(ids, m.ID)
	}
	return ids
}

func directTally(t *testing.T, s store.Store, app, oid string) push.Tally {
	t.Helper()
	n, err := s.GetNotification(bg, app, oid)
	if err != nil {
		t.Fatalf("GetNotification(%s): %v", oid, err)
	}
	return n.Counts[push.ChannelDirect]
}

// testOfflineCache: caching counts sent once per message however often it is handed in,
// lists in order, skips expired messages, ignores cancelled pushes, and an ack removes the
// message and counts one arrival however often it comes.
func testOfflineCache(t *testing.T, s store.Store) {
	app, iid := uniq("app"), "iid-1"
	now := time.Now()
	for _, oid := range []string{"m1", "m2", "m3", "m4"} {
		if err := s.CreateNotification(bg, notif(app, oid, "nid", now)); err != nil {
			t.Fatal(err)
		}
	}
	cache := func(m push.DirectMessage, at time.Time, want push.CacheOutcome) {
		t.Helper()
		got, dropped, err := s.CacheDirect(bg, m, at, 10)
		if err != nil || got != want || dropped != 0 {
			t.Fatalf("CacheDirect(%s) = %v, %d, %v; want %v", m.ID, got, dropped, err, want)
		}
	}
	cache(directMsg(app, iid, "m1", time.Time{}), now, push.CacheStored)
	cache(directMsg(app, iid, "m2", now.Add(time.Minute)), now.Add(time.Millisecond), push.CacheStored)
	cache(directMsg(app, iid, "m1", time.Time{}), now, push.CacheDuplicate)
	cache(directMsg(app, iid, "m3", now.Add(-time.Second)), now, push.CacheExpired)
	cache(directMsg(app, iid, "m3", now.Add(-time.Second)), now, push.CacheDuplicate)
	cache(directMsg(app, iid, "gone", time.Time{}), now, push.CacheCancelled)
	cache(directMsg(app, "iid-2", "m4", time.Time{}), now, push.CacheStored)

	if got := offlineIDs(t, s, app, iid, now); !slices.Equal(got, []string{"m1", "m2"}) {
		t.Errorf("cached %v, want [m1 m2]", got)
	}
	if got := offlineIDs(t, s, app, iid, now.Add(2*time.Minute)); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("cached after m2's expiry %v, want [m1]", got)
	}
	if got := offlineIDs(t, s, app, "iid-9", now); len(got) != 0 {
		t.Errorf("an empty cache lists %v", got)
	}
	if got := directTally(t, s, app, "m1"); !got.Equal(push.Tally{Sent: 1}) {
		t.Errorf("m1 tally %+v, want sent 1", got)
	}
	if got := directTally(t, s, app, "m3"); !got.Equal(push.Tally{Expired: 1}) {
		t.Errorf("m3 tally %+v, want expired, not sent", got)
	}

	n, err := s.AckDirect(bg, app, iid, []string{"m1", "m1", "unknown"}, now)
	if err != nil || n != 1 {
		t.Fatalf("AckDirect = %d, %v; want 1", n, err)
	}
	if n, err := s.AckDirect(bg, app, iid, []string{"m1"}, now); err != nil || n != 0 {
		t.Fatalf("second AckDirect = %d, %v; want 0", n, err)
	}
	if got := directTally(t, s, app, "m1"); !got.Equal(push.Tally{Sent: 1, Arrivals: 1}) {
		t.Errorf("m1 tally after ack %+v, want sent 1 arrivals 1", got)
	}
	if got := offlineIDs(t, s, app, iid, now); !slices.Equal(got, []string{"m2"}) {
		t.Errorf("cached after ack %v, want [m2]", got)
	}
	// A second copy of an acked message (consumed again after a crash) is no new message.
	cache(directMsg(app, iid, "m1", time.Time{}), now, push.CacheDuplicate)
	if got := directTally(t, s, app, "m1"); !got.Equal(push.Tally{Sent: 1, Arrivals: 1}) {
		t.Errorf("m1 tally after a second copy %+v", got)
	}
	if got := offlineIDs(t, s, app, "iid-2", now); !slices.Equal(got, []string{"m4"}) {
		t.Errorf("the other installation's cache %v, want [m4]", got)
	}
}

// testOfflineCacheBound: past the bound the oldest cached messages are dropped and counted.
func testOfflineCacheBound(t *testing.T, s store.Store) {
	app, iid := uniq("app"), "iid-1"
	now := time.Now()
	var want []string
	for i := range 5 {
		oid := "b" + string(rune('0'+i))
		if err := s.CreateNotification(bg, notif(app, oid, "nid", now)); err != nil {
			t.Fatal(err)
		}
		got, dropped, err := s.CacheDirect(bg, directMsg(app, iid, oid, time.Time{}), now.Add(time.Duration(i)*time.Millisecond), 3)
		wantDropped := 0
		if i >= 3 {
			wantDropped = 1
		}
		if err != nil || got != push.CacheStored || dropped != wantDropped {
			t.Fatalf("CacheDirect(%s) = %v, %d, %v; want stored, %d dropped", oid, got, dropped, err, wantDropped)
		}
		want = append(want, oid)
	}
	if got := offlineIDs(t, s, app, iid, now); !slices.Equal(got, want[2:]) {
		t.Errorf("cached %v, want %v", got, want[2:])
	}
}

// testOfflineCountsReaders: every record reader shows the own channel's counts, an update
// keeps them out of the stored document (no double counting), and a deleted record takes
// them with it.
func testOfflineCountsReaders(t *testing.T, s store.Store) {
	app, iid := uniq("app"), "iid-1"
	now := time.Now()
	n := notif(app, "r1", "nidR", now)
	n.Counts = push.Counts{push.ChannelDirect: {Targets: 2}}
	if err := s.CreateNotification(bg, n); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{iid, "iid-2"} {
		if out, _, err := s.CacheDirect(bg, directMsg(app, dev, "r1", time.Time{}), now, 10); err != nil || out != push.CacheStored {
			t.Fatalf("CacheDirect: %v, %v", out, err)
		}
	}
	if _, err := s.AckDirect(bg, app, iid, []string{"r1"}, now); err != nil {
		t.Fatal(err)
	}
	want := push.Tally{Targets: 2, Sent: 2, Arrivals: 1}
	upd, err := s.UpdateNotification(bg, app, "r1", func(r *push.Notification) error {
		r.Counts.Add(push.Counts{push.ChannelDirect: {Failed: 0}})
		r.TasksDone++
		return nil
	})
	if err != nil || !upd.Counts[push.ChannelDirect].Equal(want) {
		t.Errorf("UpdateNotification gave %+v, %v; want %+v", upd.Counts[push.ChannelDirect], err, want)
	}
	if got := directTally(t, s, app, "r1"); !got.Equal(want) {
		t.Errorf("GetNotification after an update: %+v, want %+v", got, want)
	}
	byNID, err := s.NotificationsByNID(bg, app, "nidR")
	if err != nil || len(byNID) != 1 || !byNID[0].Counts[push.ChannelDirect].Equal(want) {
		t.Errorf("NotificationsByNID: %+v, %v", byNID, err)
	}
	var listed push.Tally
	err = s.ListNotifications(bg, app, func(r *push.Notification) error {
		listed = r.Counts[push.ChannelDirect]
		return nil
	})
	if err != nil || !listed.Equal(want) {
		t.Errorf("ListNotifications: %+v, %v; want %+v", listed, err, want)
	}
	if err := s.DeleteNotification(bg, app, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNotification(bg, notif(app, "r1", "nidR", now)); err != nil {
		t.Fatal(err)
	}
	if got := directTally(t, s, app, "r1"); !got.Equal(push.Tally{}) {
		t.Errorf("a record created again under a deleted one's id starts with %+v", got)
	}
}
