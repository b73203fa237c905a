package pebble

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// inactiveRows lists the inactivity-index rows of app as (time in the key, objectId).
func inactiveRows(t *testing.T, s *Store, app string) []string {
	t.Helper()
	prefix := updatedPrefix(nil, app)
	var out []string
	err := s.iterate(prefix, append(append([]byte(nil), prefix...), 0xFF), func(k, _ []byte) error {
		ms, rest, err := store.DecodeKeyInt64(k[len(prefix):])
		if err != nil {
			return err
		}
		oid, _, err := store.DecodeKeyString(rest)
		if err != nil {
			return err
		}
		out = append(out, time.UnixMilli(ms).UTC().Format("15:04:05.000")+" "+oid)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func instAt(oid, iid string, updated time.Time) push.Installation {
	return push.Installation{
		Route: push.Route{ObjectID: oid, DeviceType: push.DeviceAndroid, InstallationID: iid,
			UpdatedAt: updated.UnixMilli()},
		CreatedAt: updated.UnixMilli(),
		Doc:       []byte(`{"deviceType":"android"}`),
	}
}

// TestStoreInactivityIndexByHour: the inactivity index keys an installation by the hour of its
// updatedAt, so refreshes within the hour do not touch it and a refresh in a later hour moves
// the one row.
func TestStoreInactivityIndexByHour(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Duration{10*time.Hour + 5*time.Minute, 10*time.Hour + 40*time.Minute, 10*time.Hour + 59*time.Minute} {
		if err := s.PutInstallation(ctx, "app", 4, instAt("o1", "iid1", day.Add(at))); err != nil {
			t.Fatal(err)
		}
	}
	if got := strings.Join(inactiveRows(t, s, "app"), ","); got != "10:00:00.000 o1" {
		t.Fatalf("after refreshes within 10:xx: rows %q, want one at 10:00", got)
	}
	if err := s.PutInstallation(ctx, "app", 4, instAt("o1", "iid1", day.Add(11*time.Hour+1*time.Second))); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(inactiveRows(t, s, "app"), ","); got != "11:00:00.000 o1" {
		t.Fatalf("after a refresh at 11:00:01: rows %q, want one at 11:00", got)
	}
	if err := s.DeleteInstallation(ctx, "app", 4, "o1"); err != nil {
		t.Fatal(err)
	}
	if got := inactiveRows(t, s, "app"); len(got) != 0 {
		t.Fatalf("after delete: rows %q", got)
	}
}

// TestStoreDeleteInactiveHourAndLeftoverRows: DeleteInactive removes installations updated
// before the start of cutoff's hour (one updated later in that hour waits for a later call),
// and deletes every index row it passes that no longer points at an inactive installation:
// rows with the exact updatedAt (as written before the index was kept by the hour) of an
// installation refreshed since, and rows whose installation is gone. Those do not count and do
// not stop it short of limit.
func TestStoreDeleteInactiveHourAndLeftoverRows(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	cutoff := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	legacy := func(oid string, at time.Time) { // an index row as earlier versions wrote it
		t.Helper()
		k := appendStr(appendInt64(updatedPrefix(nil, "app"), at.UnixMilli()), oid)
		if err := s.db.Set(k, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	put := func(in push.Installation) {
		t.Helper()
		if err := s.PutInstallation(ctx, "app", 4, in); err != nil {
			t.Fatal(err)
		}
	}
	// Leftovers first in key order, so a sweep that stopped at them would miss the rest.
	legacy("gone", cutoff.Add(-50*time.Hour+time.Second))             // no installation
	put(instAt("refreshed", "iid-r", cutoff.Add(time.Hour)))          // refreshed since...
	legacy("refreshed", cutoff.Add(-40*time.Hour+7*time.Millisecond)) // ...its old exact row
	put(instAt("old", "iid-o", cutoff.Add(-30*time.Hour)))            // inactive, hour row
	put(instAt("oldexact", "iid-x", cutoff.Add(-20*time.Hour)))       // inactive, exact row only:
	if err := s.db.Delete(updatedKey(nil, "app", cutoff.Add(-20*time.Hour).UnixMilli(), "oldexact"), nil); err != nil {
		t.Fatal(err)
	}
	legacy("oldexact", cutoff.Add(-20*time.Hour+123*time.Millisecond))
	put(instAt("inhour", "iid-h", cutoff.Add(-10*time.Minute))) // before cutoff, in cutoff's hour
	put(instAt("fresh", "iid-f", cutoff.Add(time.Minute)))

	n, err := s.DeleteInactive(ctx, "app", 4, cutoff, 1)
	if err != nil || n != 1 {
		t.Fatalf("DeleteInactive(limit 1) = %d, %v; want 1 past the leftover rows", n, err)
	}
	n, err = s.DeleteInactive(ctx, "app", 4, cutoff, 100)
	if err != nil || n != 1 {
		t.Fatalf("DeleteInactive = %d, %v; want 1", n, err)
	}
	for oid, want := range map[string]bool{"gone": false, "refreshed": true, "old": false, "oldexact": false, "inhour": true, "fresh": true} {
		if _, err := s.GetInstallation(ctx, "app", oid); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", oid, err == nil, want)
		}
	}
	for _, iid := range []string{"iid-o", "iid-x"} {
		if _, err := s.LookupDevice(ctx, "app", push.KindIID, iid); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("device row %s of a swept installation: %v", iid, err)
		}
	}
	// Left: refreshed in the 11:00 row; inhour and fresh in the 10:00 row.
	want := "10:00:00.000 fresh,10:00:00.000 inhour,11:00:00.000 refreshed"
	if got := strings.Join(inactiveRows(t, s, "app"), ","); got != want {
		t.Errorf("rows after the sweep: %s\nwant %s", got, want)
	}
	// Once cutoff reaches the next hour, the two updated in 10:xx go too.
	if n, err := s.DeleteInactive(ctx, "app", 4, cutoff.Add(30*time.Minute), 100); err != nil || n != 2 {
		t.Fatalf("DeleteInactive at 11:00 = %d, %v; want 2 (inhour, fresh)", n, err)
	}
	if got := strings.Join(inactiveRows(t, s, "app"), ","); got != "11:00:00.000 refreshed" {
		t.Errorf("rows after the second sweep: %s", got)
	}
}
