package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// testReceipts: a vendor receipt counts one arrival per (record, channel, device) however often
// it comes, beside the record's other counts; a missing record counts nothing; a deleted
// record takes its receipts along, so a record of the same id starts from zero.
func testReceipts(t *testing.T, s store.Store) {
	app := uniq("app")
	now := time.Now()
	if err := s.CreateNotification(bg, notif(app, "r1", "nid", now)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateNotification(bg, app, "r1", func(n *push.Notification) error {
		n.Counts = push.Counts{push.ChannelMi: {Targets: 3, Sent: 3}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	count := func(oid, ch string, ids []string, want int) {
		t.Helper()
		got, err := s.CountReceipts(bg, app, oid, ch, ids, now)
		if err != nil || got != want {
			t.Fatalf("CountReceipts(%s, %s, %v) = %d, %v; want %d", oid, ch, ids, got, err, want)
		}
	}
	count("r1", push.ChannelMi, []string{"a", "b", "a", ""}, 2)
	count("r1", push.ChannelMi, []string{"a", "b"}, 0) // the vendor repeats itself
	count("r1", push.ChannelMi, []string{"b", "c"}, 1)
	count("r1", push.ChannelHMS, []string{"a"}, 1) // another channel counts apart
	count("missing", push.ChannelMi, []string{"a"}, 0)
	n, err := s.GetNotification(bg, app, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.Counts[push.ChannelMi], (push.Tally{Targets: 3, Sent: 3, Arrivals: 3}); !got.Equal(want) {
		t.Fatalf("mi counts = %+v; want %+v", got, want)
	}
	if got := n.Counts[push.ChannelHMS]; !got.Equal(push.Tally{Arrivals: 1}) {
		t.Fatalf("hms counts = %+v; want 1 arrival", got)
	}
	var listed push.Tally
	if err := s.ListNotifications(bg, app, func(n *push.Notification) error {
		listed = n.Counts[push.ChannelMi]
		return nil
	}); err != nil || listed.Arrivals != 3 {
		t.Fatalf("ListNotifications: mi %+v, %v; want 3 arrivals", listed, err)
	}
	// UpdateNotification's fn sees the stored document only and cannot write the arrivals in.
	up, err := s.UpdateNotification(bg, app, "r1", func(n *push.Notification) error {
		if n.Counts[push.ChannelMi].Arrivals != 0 {
			return errors.New("fn saw the receipts' arrivals")
		}
		return nil
	})
	if err != nil || up.Counts[push.ChannelMi].Arrivals != 3 {
		t.Fatalf("UpdateNotification: mi %+v, %v; want 3 arrivals", up.Counts[push.ChannelMi], err)
	}
	if err := s.DeleteNotification(bg, app, "r1"); err != nil {
		t.Fatal(err)
	}
	count("r1", push.ChannelMi, []string{"a"}, 0)
	if err := s.CreateNotification(bg, notif(app, "r1", "nid", now)); err != nil {
		t.Fatal(err)
	}
	count("r1", push.ChannelMi, []string{"a"}, 1)
	if _, err := s.GetNotification(bg, app, "r1"); err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
}
