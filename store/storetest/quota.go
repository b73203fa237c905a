package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Vendor quotas (issue 20 item 2): a budget's day grants up to its limit, a later day starts
// again, a day the vendor called spent grants nothing, and concurrent reservations (two
// fan-out nodes) never sum past the limit.
func testVendorQuota(t *testing.T, s store.Store) {
	app := uniq("app")
	until := time.Now().Add(time.Hour)
	reserve := func(budget, day string, want, limit int64) int64 {
		t.Helper()
		n, err := s.ReserveVendorQuota(bg, app, budget, day, want, limit, until)
		if err != nil {
			t.Fatalf("ReserveVendorQuota: %v", err)
		}
		return n
	}
	if n := reserve("vivo/system", "2026-11-25", 300, 500); n != 300 {
		t.Fatalf("first reservation = %d, want 300", n)
	}
	if n := reserve("vivo/system", "2026-11-25", 300, 500); n != 200 {
		t.Fatalf("second reservation = %d, want the 200 left", n)
	}
	if n := reserve("vivo/system", "2026-11-25", 1, 500); n != 0 {
		t.Fatalf("reservation of a spent day = %d, want 0", n)
	}
	if n := reserve("vivo/marketing", "2026-11-25", 10, 20); n != 10 {
		t.Fatalf("another budget's reservation = %d, want 10 (budgets apart)", n)
	}
	if n := reserve("vivo/system", "2026-11-26", 300, 500); n != 300 {
		t.Fatalf("next day's reservation = %d, want 300 (a new day)", n)
	}
	if err := s.SpendVendorQuota(bg, app, "vivo/system", "2026-11-26", until); err != nil {
		t.Fatal(err)
	}
	if n := reserve("vivo/system", "2026-11-26", 1, 500); n != 0 {
		t.Fatalf("reservation of a day the vendor called spent = %d, want 0", n)
	}
	if n := reserve("vivo/system", "2026-11-27", 1, 500); n != 1 {
		t.Fatalf("reservation of the day after a spent one = %d, want 1", n)
	}
}

func testVendorQuotaConcurrent(t *testing.T, s store.Store) {
	app := uniq("app")
	checkConcurrentGrants(t, s, "units", func() (int64, error) {
		n, err := s.ReserveVendorQuota(bg, app, "oppo/system", "2026-11-25", 1, concurrentLimit, time.Now().Add(time.Hour))
		if err != nil {
			return 0, fmt.Errorf("ReserveVendorQuota: %w", err)
		}
		return n, nil
	})
}

// Deferred targets: due ones are listed oldest window first, a second write of a target
// overwrites it, and deleted ones are gone.
func testDeferred(t *testing.T, s store.Store) {
	app := uniq("app")
	w1 := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	w2 := w1.Add(30 * time.Minute)
	later := w1.Add(48 * time.Hour)
	mk := func(until time.Time, oid string) push.Deferred {
		return push.Deferred{AppID: app, Vendor: push.ChannelVivo, Class: push.ClassSystem, Until: until, PushID: "p1",
			Target:  push.Target{ObjectID: oid, Channel: push.ChannelVivo, DeviceID: "reg-" + oid},
			Message: &push.Message{Channel: push.ChannelVivo, Body: []byte(`{"x":1}`), Expiration: later.Add(time.Hour)}, Reason: "r"}
	}
	ds := []push.Deferred{mk(w2, "o3"), mk(w1, "o1"), mk(w1, "o2"), mk(later, "o4")}
	if err := s.PutDeferred(bg, ds); err != nil {
		t.Fatal(err)
	}
	again := mk(w1, "o1")
	again.Reason = "again"
	if err := s.PutDeferred(bg, []push.Deferred{again}); err != nil {
		t.Fatal(err)
	}
	mine := func() []push.Deferred {
		t.Helper()
		got, err := s.DueDeferred(bg, w2, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []push.Deferred
		for _, d := range got {
			if d.AppID == app {
				out = append(out, d)
			}
		}
		return out
	}
	got := mine()
	if len(got) != 3 || !got[0].Until.Equal(w1) || !got[2].Until.Equal(w2) || got[2].Target.ObjectID != "o3" {
		t.Fatalf("due = %+v, want o1, o2 (window 1) then o3 (window 2)", got)
	}
	for _, d := range got {
		if d.Target.ObjectID == "o1" && d.Reason != "again" {
			t.Errorf("o1 written twice: reason %q, want the second write's", d.Reason)
		}
		if string(d.Message.Body) != `{"x":1}` || !d.Message.Expiration.Equal(later.Add(time.Hour)) {
			t.Errorf("message read back %+v", d.Message)
		}
	}
	if err := s.DeleteDeferred(bg, got[:2]); err != nil {
		t.Fatal(err)
	}
	if got := mine(); len(got) != 1 || got[0].Target.ObjectID != "o3" {
		t.Fatalf("due after deleting window 1 = %+v, want o3 only", got)
	}
}
