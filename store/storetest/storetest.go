// Package storetest is the contract suite every store.Store implementation passes. Run opens
// stores through the caller's factory; subtests use app ids, names and job ids unique to the
// run, so the suite also works against a shared Cassandra keyspace. It holds no state between
// calls and starts no goroutine that outlives a subtest.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Run runs the contract suite. open returns a fresh (or at least shared-safe) store; the suite
// closes nothing that open's cleanup does not (open should register Close with t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Apps", testApps},
		{"InstallationRoundTrip", testInstallationRoundTrip},
		{"InstallationIndexesFollowUpdates", testIndexesFollowUpdates},
		{"InstallationDuplicateWritesNothing", testDuplicate},
		{"InstallationDelete", testDeleteInstallation},
		{"CrossAppIsolation", testCrossApp},
		{"ScanOrderAndCursor", testScanCursor},
		{"ScanDeviceTypeFilter", testScanDeviceType},
		{"ScanCallbackError", testScanCallbackError},
		{"DeleteInactive", testDeleteInactive},
		{"Notifications", testNotifications},
		{"NotificationUpdateConcurrent", testNotificationConcurrent},
		{"Scheduled", testScheduled},
		{"PendingJobs", testPendingJobs},
		{"CreateScheduledNotification", testCreateScheduledNotification},
		{"NextIDConcurrent", testNextID},
		{"ClaimReqID", testClaimReqID},
		{"DailyVolume", testDailyVolume},
		{"MarketingCounts", testMarketingCounts},
		{"TaskProgress", testTaskProgress},
		{"InstallationBadgeIncrement", testBadgeIncrement},
		{"DeadTokens", testDeadTokens},
		{"OfflineCache", testOfflineCache},
		{"OfflineCacheBound", testOfflineCacheBound},
		{"Receipts", testReceipts},
		{"OfflineCountsInRecordReaders", testOfflineCountsReaders},
		{"LeaseAcquire", testLeaseAcquire},
		{"LeaseRenewExpiry", testLeaseRenewExpiry},
		{"LeaseRelease", testLeaseRelease},
		{"LeaseConcurrent", testLeaseConcurrent},
		{"ScheduledClaimFencing", testScheduledClaimFencing},
		{"Gateways", testGateways},
		{"Presence", testPresence},
		{"PresenceDeletedWithInstallation", testPresenceDeleted},
		{"ReserveCalls", testReserveCalls},
		{"ReserveCallsConcurrent", testReserveCallsConcurrent},
		{"AppBlocks", testAppBlocks},
		{"InstallationConcurrentSameDevice", testInstallationConcurrentSameDevice},
		{"Members", testMembers},
		{"VendorQuota", testVendorQuota},
		{"VendorQuotaConcurrent", testVendorQuotaConcurrent},
		{"Deferred", testDeferred},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

const buckets = 16

var bg = context.Background()

// uniq returns name with a random suffix: ids unique to this run.
func uniq(name string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// ms is a time with the millisecond precision every store keeps.
func ms(t time.Time) time.Time { return t.Truncate(time.Millisecond) }

// inst builds an installation with a JSON document that mirrors its route.
func inst(oid, deviceType, token string, channels ...string) push.Installation {
	r := push.Route{
		ObjectID: oid, DeviceType: deviceType, Channels: channels,
		UpdatedAt: time.Now().UnixMilli(),
	}
	if deviceType == push.DeviceIOS {
		r.DeviceToken, r.APNsTopic, r.APNsTeamID = token, "com.example.app", "TEAM1"
	} else {
		r.InstallationID = token
	}
	doc, _ := json.Marshal(map[string]any{
		"objectId": oid, "deviceType": deviceType, "deviceToken": r.DeviceToken,
		"installationId": r.InstallationID, "channels": channels,
	})
	return push.Installation{Route: r, CreatedAt: r.UpdatedAt, Doc: doc}
}

// wantDevice checks that the device id belongs to installation want.
func wantDevice(t *testing.T, s store.Store, app string, kind push.IDKind, id, want string) {
	t.Helper()
	if oid, err := s.LookupDevice(bg, app, kind, id); err != nil || oid != want {
		t.Errorf("LookupDevice(%s %s) = %q, %v; want %s", kind, id, oid, err, want)
	}
}

func mustPut(t *testing.T, s store.Store, app string, in push.Installation) {
	t.Helper()
	if err := s.PutInstallation(bg, app, buckets, in); err != nil {
		t.Fatalf("PutInstallation(%s): %v", in.ObjectID, err)
	}
}

// scanned is one row copied out of a scan.
type scanned struct {
	cursor []byte
	route  push.Route
	doc    string
}

func scanAll(t *testing.T, s store.Store, r store.ScanRange) []scanned {
	t.Helper()
	var out []scanned
	err := s.Scan(bg, r, func(row *store.Row) error {
		rt := *row.Route
		// Copy the aliased strings.
		rt.ObjectID = string([]byte(rt.ObjectID))
		rt.DeviceType = string([]byte(rt.DeviceType))
		rt.DeviceToken = string([]byte(rt.DeviceToken))
		rt.InstallationID = string([]byte(rt.InstallationID))
		rt.RegistrationID = string([]byte(rt.RegistrationID))
		rt.Vendor = string([]byte(rt.Vendor))
		rt.DeviceProfile = string([]byte(rt.DeviceProfile))
		rt.APNsTopic = string([]byte(rt.APNsTopic))
		rt.APNsTeamID = string([]byte(rt.APNsTeamID))
		chans := make([]string, len(rt.Channels))
		for i, c := range rt.Channels {
			chans[i] = string([]byte(c))
		}
		rt.Channels = chans
		out = append(out, scanned{cursor: slices.Clone(row.Cursor), route: rt, doc: string(row.Doc)})
		return nil
	})
	if err != nil {
		t.Fatalf("Scan(%+v): %v", r, err)
	}
	return out
}

// scanIDs returns the object ids of every row of the app (all buckets) in a channel ("" for
// by_bucket), sorted.
func scanIDs(t *testing.T, s store.Store, app, channel string) []string {
	t.Helper()
	var ids []string
	for b := 0; b < buckets; b++ {
		for _, row := range scanAll(t, s, store.ScanRange{AppID: app, Channel: channel, Bucket: b}) {
			if push.Bucket(row.route.ObjectID, buckets) != b {
				t.Errorf("object %s found in bucket %d, belongs in %d", row.route.ObjectID, b, push.Bucket(row.route.ObjectID, buckets))
			}
			ids = append(ids, row.route.ObjectID)
		}
	}
	sort.Strings(ids)
	return ids
}

func wantIDs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	sort.Strings(want)
	if len(want) == 0 {
		want = nil
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func testApps(t *testing.T, s store.Store) {
	id := uniq("app")
	app := push.App{ID: id, Name: "one", AppKey: "k", MasterKey: "m", Settings: push.DefaultSettings(),
		CreatedAt: ms(time.Now()).UTC(), UpdatedAt: ms(time.Now()).UTC()}
	if _, err := s.GetApp(bg, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetApp before create: %v, want ErrNotFound", err)
	}
	wantErr(t, "PutApp of a missing app", s.PutApp(bg, app), store.ErrNotFound)
	if err := s.CreateApp(bg, app); err != nil {
		t.Fatalf("CreateApp: %v", err)
	}
	wantErr(t, "CreateApp twice", s.CreateApp(bg, app), store.ErrExists)
	app.Name = "renamed"
	app.Credentials = map[string]json.RawMessage{"apns": json.RawMessage(`{"keyId":"K"}`)}
	if err := s.PutApp(bg, app); err != nil {
		t.Fatalf("PutApp: %v", err)
	}
	got, err := s.GetApp(bg, id)
	if err != nil {
		t.Fatalf("GetApp: %v", err)
	}
	if got.Name != "renamed" || got.Settings != app.Settings || string(got.Credentials["apns"]) != `{"keyId":"K"}` || !got.CreatedAt.Equal(app.CreatedAt) {
		t.Errorf("GetApp = %+v, want %+v", got, app)
	}
	apps, err := s.ListApps(bg)
	if err != nil {
		t.Fatalf("ListApps: %v", err)
	}
	if !slices.ContainsFunc(apps, func(a push.App) bool { return a.ID == id && a.Name == "renamed" }) {
		t.Errorf("ListApps does not hold %s: %+v", id, apps)
	}
}

func testInstallationRoundTrip(t *testing.T, s store.Store) {
	app := uniq("app")
	in := inst("o1", push.DeviceIOS, "tok1", "news", "sport")
	in.Vendor, in.DeviceProfile, in.Invalid = "", "prof", true
	mustPut(t, s, app, in)
	got, err := s.GetInstallation(bg, app, "o1")
	if err != nil {
		t.Fatalf("GetInstallation: %v", err)
	}
	if got.ObjectID != "o1" || got.DeviceToken != "tok1" || got.APNsTopic != "com.example.app" ||
		got.DeviceProfile != "prof" || !got.Invalid || got.CreatedAt != in.CreatedAt ||
		got.UpdatedAt != in.UpdatedAt || !slices.Equal(got.Channels, in.Channels) || string(got.Doc) != string(in.Doc) {
		t.Errorf("GetInstallation = %+v, want %+v", got, in)
	}
	if oid, err := s.LookupDevice(bg, app, push.KindToken, "tok1"); err != nil || oid != "o1" {
		t.Errorf("LookupDevice(token) = %q, %v; want o1", oid, err)
	}
	if _, err := s.LookupDevice(bg, app, push.KindIID, "tok1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LookupDevice(iid of a token) = %v, want ErrNotFound", err)
	}
	if _, err := s.GetInstallation(bg, app, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetInstallation(missing) = %v, want ErrNotFound", err)
	}
	rows := scanAll(t, s, store.ScanRange{AppID: app, Bucket: push.Bucket("o1", buckets)})
	if len(rows) != 1 {
		t.Fatalf("by_bucket rows = %d, want 1", len(rows))
	}
	if r := rows[0]; r.route.DeviceToken != "tok1" || r.route.APNsTeamID != "TEAM1" || !r.route.Invalid ||
		!slices.Equal(r.route.Channels, in.Channels) || r.doc != string(in.Doc) || r.route.UpdatedAt != in.UpdatedAt {
		t.Errorf("by_bucket row = %+v, want route %+v doc %s", r, in.Route, in.Doc)
	}
	for _, ch := range []string{"news", "sport"} {
		wantIDs(t, "channel "+ch, scanIDs(t, s, app, ch), "o1")
	}
	wantIDs(t, "channel other", scanIDs(t, s, app, "other"))
}

func testIndexesFollowUpdates(t *testing.T, s store.Store) {
	app := uniq("app")
	mustPut(t, s, app, inst("o1", push.DeviceAndroid, "iid1", "a", "b"))
	mustPut(t, s, app, inst("o2", push.DeviceAndroid, "iid2", "b"))
	// Looked up before the change, so an implementation that remembers lookups must forget.
	wantDevice(t, s, app, push.KindIID, "iid1", "o1")

	// o1 changes channels, device id and device type.
	up := inst("o1", push.DeviceIOS, "tok9", "b", "c")
	mustPut(t, s, app, up)
	wantIDs(t, "channel a", scanIDs(t, s, app, "a"))
	wantIDs(t, "channel b", scanIDs(t, s, app, "b"), "o1", "o2")
	wantIDs(t, "channel c", scanIDs(t, s, app, "c"), "o1")
	wantIDs(t, "by_bucket", scanIDs(t, s, app, ""), "o1", "o2")
	if _, err := s.LookupDevice(bg, app, push.KindIID, "iid1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("old installationId still indexed: %v", err)
	}
	if oid, err := s.LookupDevice(bg, app, push.KindToken, "tok9"); err != nil || oid != "o1" {
		t.Errorf("LookupDevice(new token) = %q, %v", oid, err)
	}
	b := push.Bucket("o1", buckets)
	if rows := scanAll(t, s, store.ScanRange{AppID: app, Bucket: b, DeviceType: push.DeviceAndroid}); slices.ContainsFunc(rows, func(r scanned) bool { return r.route.ObjectID == "o1" }) {
		t.Errorf("o1 still under deviceType android after becoming ios")
	}
	// The freed id can be taken by another installation.
	mustPut(t, s, app, inst("o3", push.DeviceAndroid, "iid1"))
	wantDevice(t, s, app, push.KindIID, "iid1", "o3")
	// Rewriting the same version keeps exactly one row per index.
	mustPut(t, s, app, up)
	wantIDs(t, "by_bucket after rewrite", scanIDs(t, s, app, ""), "o1", "o2", "o3")
	wantIDs(t, "channel c after rewrite", scanIDs(t, s, app, "c"), "o1")
}

func testDuplicate(t *testing.T, s store.Store) {
	app := uniq("app")
	mustPut(t, s, app, inst("o1", push.DeviceIOS, "tok1", "a"))
	mustPut(t, s, app, inst("o2", push.DeviceIOS, "tok2", "a"))
	err := s.PutInstallation(bg, app, buckets, inst("o3", push.DeviceIOS, "tok1", "z"))
	wantErr(t, "new installation with a taken token", err, store.ErrDuplicate)
	if _, err := s.GetInstallation(bg, app, "o3"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("o3 written despite ErrDuplicate: %v", err)
	}
	wantIDs(t, "channel z", scanIDs(t, s, app, "z"))
	// An update of o2 to o1's token fails and leaves o2 as it was.
	err = s.PutInstallation(bg, app, buckets, inst("o2", push.DeviceIOS, "tok1", "y"))
	wantErr(t, "update to a taken token", err, store.ErrDuplicate)
	got, err := s.GetInstallation(bg, app, "o2")
	if err != nil || got.DeviceToken != "tok2" || !slices.Equal(got.Channels, []string{"a"}) {
		t.Errorf("o2 after failed update = %+v, %v", got, err)
	}
	wantIDs(t, "channel y", scanIDs(t, s, app, "y"))
	wantIDs(t, "channel a", scanIDs(t, s, app, "a"), "o1", "o2")
	if oid, err := s.LookupDevice(bg, app, push.KindToken, "tok2"); err != nil || oid != "o2" {
		t.Errorf("LookupDevice(tok2) = %q, %v", oid, err)
	}
}

func testDeleteInstallation(t *testing.T, s store.Store) {
	app := uniq("app")
	mustPut(t, s, app, inst("o1", push.DeviceAndroid, "iid1", "a"))
	mustPut(t, s, app, inst("o2", push.DeviceAndroid, "iid2", "a"))
	wantDevice(t, s, app, push.KindIID, "iid1", "o1")
	if err := s.DeleteInstallation(bg, app, buckets, "o1"); err != nil {
		t.Fatalf("DeleteInstallation: %v", err)
	}
	wantErr(t, "DeleteInstallation twice", s.DeleteInstallation(bg, app, buckets, "o1"), store.ErrNotFound)
	if _, err := s.GetInstallation(bg, app, "o1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetInstallation after delete: %v", err)
	}
	if _, err := s.LookupDevice(bg, app, push.KindIID, "iid1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LookupDevice after delete: %v", err)
	}
	wantIDs(t, "by_bucket", scanIDs(t, s, app, ""), "o2")
	wantIDs(t, "channel a", scanIDs(t, s, app, "a"), "o2")
}

func testCrossApp(t *testing.T, s store.Store) {
	a1, a2 := uniq("app"), uniq("app")
	mustPut(t, s, a1, inst("o1", push.DeviceIOS, "tok1", "news"))
	if _, err := s.GetInstallation(bg, a2, "o1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other app's installation found: %v", err)
	}
	if _, err := s.LookupDevice(bg, a2, push.KindToken, "tok1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other app's token found: %v", err)
	}
	// The same object id and token in another app are independent.
	mustPut(t, s, a2, inst("o1", push.DeviceIOS, "tok1", "sport"))
	wantIDs(t, "a1 scan", scanIDs(t, s, a1, ""), "o1")
	wantIDs(t, "a1 channel sport", scanIDs(t, s, a1, "sport"))
	wantIDs(t, "a2 channel news", scanIDs(t, s, a2, "news"))
	// An app id that is a prefix of another sees none of its rows.
	prefix := a1[:len(a1)-2]
	wantIDs(t, "prefix app scan", scanIDs(t, s, prefix, ""))
	if err := s.DeleteInstallation(bg, a2, buckets, "o1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetInstallation(bg, a1, "o1"); err != nil {
		t.Errorf("deleting in a2 removed a1's installation: %v", err)
	}
	n, err := s.DeleteInactive(bg, a2, buckets, time.Now().Add(time.Hour), 100)
	if err != nil || n != 0 {
		t.Errorf("DeleteInactive of an empty app = %d, %v", n, err)
	}
	if _, err := s.GetInstallation(bg, a1, "o1"); err != nil {
		t.Errorf("DeleteInactive of a2 removed a1's installation: %v", err)
	}
}

// sameBucketIDs returns n object ids that all fall in bucket 0.
func sameBucketIDs(n int) []string {
	var ids []string
	for i := 0; len(ids) < n; i++ {
		id := fmt.Sprintf("obj%04d", i)
		if push.Bucket(id, buckets) == 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

func testScanCursor(t *testing.T, s store.Store) {
	app := uniq("app")
	ids := sameBucketIDs(30)
	var want []string // key order: deviceType, then objectId
	for i, id := range ids {
		dt := push.DeviceAndroid
		if i%3 == 0 {
			dt = push.DeviceIOS
		}
		mustPut(t, s, app, inst(id, dt, "d-"+id, "ch"))
	}
	for _, dt := range []string{push.DeviceAndroid, push.DeviceIOS} {
		for i, id := range ids {
			if (i%3 == 0) == (dt == push.DeviceIOS) {
				want = append(want, id)
			}
		}
	}
	for _, channel := range []string{"", "ch"} {
		all := scanAll(t, s, store.ScanRange{AppID: app, Channel: channel, Bucket: 0})
		var got []string
		for _, r := range all {
			got = append(got, r.route.ObjectID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("scan order (channel %q):\n got %q\nwant %q", channel, got, want)
		}
		// Resume after every row: the rest comes, nothing repeats.
		for i := range all {
			rest := scanAll(t, s, store.ScanRange{AppID: app, Channel: channel, Bucket: 0, After: all[i].cursor})
			var ids []string
			for _, r := range rest {
				ids = append(ids, r.route.ObjectID)
			}
			if !slices.Equal(ids, want[i+1:]) {
				t.Fatalf("resume after row %d (channel %q): got %q, want %q", i, channel, ids, want[i+1:])
			}
		}
		// Cursors are the shared (deviceType, objectId) encoding.
		dt, oid, err := store.DecodeCursor(all[0].cursor)
		if err != nil || dt != push.DeviceAndroid || oid != want[0] {
			t.Errorf("DecodeCursor = %q %q %v", dt, oid, err)
		}
	}
	// Cursors survive past their callback, and a checkpoint taken mid-scan resumes.
	var kept [][]byte
	err := s.Scan(bg, store.ScanRange{AppID: app, Bucket: 0}, func(r *store.Row) error {
		kept = append(kept, r.Cursor)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range kept {
		if _, oid, err := store.DecodeCursor(c); err != nil || oid != want[i] {
			t.Fatalf("kept cursor %d decodes to %q, %v; want %q", i, oid, err, want[i])
		}
	}
}

func testScanDeviceType(t *testing.T, s store.Store) {
	app := uniq("app")
	ids := sameBucketIDs(12)
	var ios, android []string
	for i, id := range ids {
		if i%2 == 0 {
			mustPut(t, s, app, inst(id, push.DeviceIOS, "t-"+id, "c"))
			ios = append(ios, id)
		} else {
			mustPut(t, s, app, inst(id, push.DeviceAndroid, "i-"+id, "c"))
			android = append(android, id)
		}
	}
	for _, channel := range []string{"", "c"} {
		for dt, want := range map[string][]string{push.DeviceIOS: ios, push.DeviceAndroid: android, "windows": nil} {
			rows := scanAll(t, s, store.ScanRange{AppID: app, Channel: channel, Bucket: 0, DeviceType: dt})
			var got []string
			for _, r := range rows {
				if r.route.DeviceType != dt {
					t.Errorf("filter %s returned a %s row", dt, r.route.DeviceType)
				}
				got = append(got, r.route.ObjectID)
			}
			if !slices.Equal(got, want) {
				t.Errorf("deviceType %s (channel %q): got %q, want %q", dt, channel, got, want)
			}
			if len(rows) > 2 {
				rest := scanAll(t, s, store.ScanRange{AppID: app, Channel: channel, Bucket: 0, DeviceType: dt, After: rows[1].cursor})
				if len(rest) != len(want)-2 || rest[0].route.ObjectID != want[2] {
					t.Errorf("deviceType %s resume: got %d rows", dt, len(rest))
				}
			}
		}
	}
	// A cursor from another device type's range: android < ios, so resuming an ios scan after
	// an android cursor yields all ios rows, and an android scan after an ios cursor none.
	rowsA := scanAll(t, s, store.ScanRange{AppID: app, Bucket: 0, DeviceType: push.DeviceAndroid})
	rowsI := scanAll(t, s, store.ScanRange{AppID: app, Bucket: 0, DeviceType: push.DeviceIOS})
	if got := scanAll(t, s, store.ScanRange{AppID: app, Bucket: 0, DeviceType: push.DeviceIOS, After: rowsA[len(rowsA)-1].cursor}); len(got) != len(ios) {
		t.Errorf("ios after an android cursor: %d rows, want %d", len(got), len(ios))
	}
	if got := scanAll(t, s, store.ScanRange{AppID: app, Bucket: 0, DeviceType: push.DeviceAndroid, After: rowsI[0].cursor}); len(got) != 0 {
		t.Errorf("android after an ios cursor: %d rows, want 0", len(got))
	}
}

func testScanCallbackError(t *testing.T, s store.Store) {
	app := uniq("app")
	for _, id := range sameBucketIDs(5) {
		mustPut(t, s, app, inst(id, push.DeviceIOS, "t-"+id))
	}
	stop := errors.New("stop here")
	n := 0
	err := s.Scan(bg, store.ScanRange{AppID: app, Bucket: 0}, func(*store.Row) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Errorf("Scan with a failing callback: %v after %d rows; want the callback's error after 2", err, n)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	err = s.Scan(ctx, store.ScanRange{AppID: app, Bucket: 0}, func(*store.Row) error { return nil })
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Scan with a cancelled context: %v", err)
	}
}

func testDeleteInactive(t *testing.T, s store.Store) {
	app := uniq("app")
	now := time.Now()
	old := inst("old1", push.DeviceIOS, "tokold1", "ch")
	old.UpdatedAt = now.Add(-100 * 24 * time.Hour).UnixMilli()
	old2 := inst("old2", push.DeviceAndroid, "iidold2", "ch")
	old2.UpdatedAt = now.Add(-95 * 24 * time.Hour).UnixMilli()
	refreshed := inst("ref", push.DeviceIOS, "tokref", "ch")
	refreshed.UpdatedAt = now.Add(-200 * 24 * time.Hour).UnixMilli()
	mustPut(t, s, app, old)
	mustPut(t, s, app, old2)
	mustPut(t, s, app, refreshed)
	refreshed.UpdatedAt = now.UnixMilli() // refreshed since: must survive
	mustPut(t, s, app, refreshed)
	mustPut(t, s, app, inst("fresh", push.DeviceIOS, "tokfresh", "ch"))

	wantDevice(t, s, app, push.KindToken, "tokold1", "old1")
	wantDevice(t, s, app, push.KindIID, "iidold2", "old2")
	cutoff := now.Add(-push.InactiveAfter)
	n, err := s.DeleteInactive(bg, app, buckets, cutoff, 1)
	if err != nil || n != 1 {
		t.Fatalf("DeleteInactive(limit 1) = %d, %v; want 1", n, err)
	}
	n, err = s.DeleteInactive(bg, app, buckets, cutoff, 100)
	if err != nil || n != 1 {
		t.Fatalf("DeleteInactive = %d, %v; want 1", n, err)
	}
	wantIDs(t, "by_bucket after sweep", scanIDs(t, s, app, ""), "fresh", "ref")
	wantIDs(t, "channel after sweep", scanIDs(t, s, app, "ch"), "fresh", "ref")
	for _, d := range []struct {
		kind push.IDKind
		id   string
	}{{push.KindToken, "tokold1"}, {push.KindIID, "iidold2"}} {
		if _, err := s.LookupDevice(bg, app, d.kind, d.id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("swept device id %s still indexed: %v", d.id, err)
		}
	}
	if n, err := s.DeleteInactive(bg, app, buckets, cutoff, 100); err != nil || n != 0 {
		t.Errorf("second sweep = %d, %v; want 0", n, err)
	}
}

func notif(app, oid, nid string, created time.Time) push.Notification {
	return push.Notification{ObjectID: oid, AppID: app, NotificationID: nid, JobID: "job-" + oid,
		Status: push.StatusInQueue, CreatedAt: ms(created).UTC(), UpdatedAt: ms(created).UTC(),
		Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}
}

func testNotifications(t *testing.T, s store.Store) {
	app, other := uniq("app"), uniq("app")
	t0 := time.Now().Add(-time.Hour)
	for i, oid := range []string{"n1", "n2", "n3"} {
		nid := "nidA"
		if oid == "n3" {
			nid = "nidB"
		}
		if err := s.CreateNotification(bg, notif(app, oid, nid, t0.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatalf("CreateNotification(%s): %v", oid, err)
		}
	}
	if err := s.CreateNotification(bg, notif(other, "n9", "nidA", t0)); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetNotification(bg, app, "n2")
	if err != nil || got.NotificationID != "nidA" || got.JobID != "job-n2" || string(got.Data) != `{"alert":"hi"}` ||
		!got.CreatedAt.Equal(ms(t0.Add(time.Minute))) {
		t.Errorf("GetNotification = %+v, %v", got, err)
	}
	if _, err := s.GetNotification(bg, other, "n2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other app's record found: %v", err)
	}
	var order []string
	err = s.ListNotifications(bg, app, func(n *push.Notification) error {
		order = append(order, n.ObjectID)
		return nil
	})
	if err != nil || !slices.Equal(order, []string{"n3", "n2", "n1"}) {
		t.Errorf("ListNotifications = %q, %v; want newest first", order, err)
	}
	byNID, err := s.NotificationsByNID(bg, app, "nidA")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range byNID {
		ids = append(ids, n.ObjectID)
	}
	if !slices.Equal(ids, []string{"n2", "n1"}) {
		t.Errorf("NotificationsByNID(nidA) = %q, want [n2 n1] (newest first, this app only)", ids)
	}
	upd, err := s.UpdateNotification(bg, app, "n1", func(n *push.Notification) error {
		n.Status = push.StatusDone
		n.Counts = push.Counts{push.ChannelAPNs: {Targets: 3, Sent: 2, Failed: 1}}
		return nil
	})
	if err != nil || upd.Status != push.StatusDone {
		t.Fatalf("UpdateNotification = %+v, %v", upd, err)
	}
	got, _ = s.GetNotification(bg, app, "n1")
	if got.Status != push.StatusDone || got.Counts[push.ChannelAPNs].Sent != 2 {
		t.Errorf("after update: %+v", got)
	}
	abort := errors.New("abort")
	_, err = s.UpdateNotification(bg, app, "n1", func(n *push.Notification) error {
		n.Status = push.StatusCancelled
		return abort
	})
	if !errors.Is(err, abort) {
		t.Errorf("UpdateNotification with a failing fn: %v", err)
	}
	if got, _ := s.GetNotification(bg, app, "n1"); got.Status != push.StatusDone {
		t.Errorf("aborted update was written: %s", got.Status)
	}
	if _, err := s.UpdateNotification(bg, app, "missing", func(*push.Notification) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateNotification(missing) = %v", err)
	}
	if err := s.DeleteNotification(bg, app, "n2"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "DeleteNotification twice", s.DeleteNotification(bg, app, "n2"), store.ErrNotFound)
	order = order[:0]
	_ = s.ListNotifications(bg, app, func(n *push.Notification) error {
		order = append(order, n.ObjectID)
		return nil
	})
	if !slices.Equal(order, []string{"n3", "n1"}) {
		t.Errorf("after delete: %q", order)
	}
	if byNID, _ := s.NotificationsByNID(bg, app, "nidA"); len(byNID) != 1 || byNID[0].ObjectID != "n1" {
		t.Errorf("by nid after delete: %+v", byNID)
	}
	stop := errors.New("stop")
	n := 0
	err = s.ListNotifications(bg, app, func(*push.Notification) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("ListNotifications stop: %v after %d", err, n)
	}
}

func testNotificationConcurrent(t *testing.T, s store.Store) {
	app := uniq("app")
	if err := s.CreateNotification(bg, notif(app, "n1", "nid", time.Now())); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := s.UpdateNotification(bg, app, "n1", func(n *push.Notification) error {
					n.TasksDone++
					if n.Counts == nil {
						n.Counts = push.Counts{}
					}
					n.Counts.Add(push.Counts{push.ChannelDirect: {Sent: 1}})
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("UpdateNotification: %v", err)
	}
	got, err := s.GetNotification(bg, app, "n1")
	if err != nil || got.TasksDone != workers*each || got.Counts[push.ChannelDirect].Sent != workers*each {
		t.Errorf("after %d concurrent increments: tasksDone %d sent %d, %v", workers*each, got.TasksDone, got.Counts[push.ChannelDirect].Sent, err)
	}
}

func testScheduled(t *testing.T, s store.Store) {
	app, other := uniq("app"), uniq("app")
	now := ms(time.Now()).UTC()
	mk := func(app string, id int64, due time.Time) push.Scheduled {
		return push.Scheduled{ID: id, AppID: app, DueAt: ms(due).UTC(), CreatedAt: now,
			Job: push.Job{ID: fmt.Sprintf("job%d", id), AppID: app, Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"x"}`)}}
	}
	var ids []int64
	for range 4 {
		id, err := s.NextID(bg, "scheduled")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	dues := []time.Duration{-time.Minute, -3 * time.Minute, time.Hour, -2 * time.Minute}
	for i, id := range ids[:3] {
		if err := s.PutScheduled(bg, mk(app, id, now.Add(dues[i]))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutScheduled(bg, mk(other, ids[3], now.Add(dues[3]))); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetScheduled(bg, app, ids[0])
	if err != nil || got.Job.ID != fmt.Sprintf("job%d", ids[0]) || !got.DueAt.Equal(now.Add(-time.Minute)) || string(got.Job.Data) != `{"alert":"x"}` {
		t.Errorf("GetScheduled = %+v, %v", got, err)
	}
	if _, err := s.GetScheduled(bg, other, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("other app's schedule found: %v", err)
	}
	list, err := s.ListScheduled(bg, app)
	if err != nil || len(list) != 3 {
		t.Fatalf("ListScheduled = %d, %v; want 3", len(list), err)
	}
	for _, sc := range list {
		if sc.AppID != app {
			t.Errorf("ListScheduled returned app %s", sc.AppID)
		}
	}
	due, err := s.DueScheduled(bg, now, 100)
	if err != nil {
		t.Fatal(err)
	}
	var dueIDs []int64
	for _, sc := range due {
		if sc.AppID == app || sc.AppID == other {
			dueIDs = append(dueIDs, sc.ID)
		}
	}
	if want := []int64{ids[1], ids[3], ids[0]}; !slices.Equal(dueIDs, want) {
		t.Errorf("DueScheduled = %v, want %v (oldest due first)", dueIDs, want)
	}
	for i := 1; i < len(due); i++ {
		if due[i].DueAt.Before(due[i-1].DueAt) {
			t.Errorf("DueScheduled out of order at %d", i)
		}
	}
	// Moving a schedule moves its due row.
	moved := mk(app, ids[2], now.Add(-10*time.Minute))
	if err := s.PutScheduled(bg, moved); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.DueScheduled(bg, now, 100); !slices.ContainsFunc(due, func(sc push.Scheduled) bool { return sc.ID == ids[2] }) {
		t.Errorf("moved schedule not due")
	}
	if err := s.DeleteScheduled(bg, app, ids[0]); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "DeleteScheduled twice", s.DeleteScheduled(bg, app, ids[0]), store.ErrNotFound)
	wantErr(t, "DeleteScheduled of another app's id", s.DeleteScheduled(bg, app, ids[3]), store.ErrNotFound)
	due, _ = s.DueScheduled(bg, now, 100)
	if slices.ContainsFunc(due, func(sc push.Scheduled) bool { return sc.ID == ids[0] && sc.AppID == app }) {
		t.Errorf("deleted schedule still due")
	}
	if due, _ := s.DueScheduled(bg, now.Add(-time.Hour*24*365*50), 100); len(due) != 0 {
		t.Errorf("DueScheduled far in the past = %d rows", len(due))
	}
	if due, _ := s.DueScheduled(bg, now, 1); len(due) != 1 {
		t.Errorf("DueScheduled limit 1 = %d rows", len(due))
	}
}

func testNextID(t *testing.T, s store.Store) {
	name := uniq("ids")
	const workers, each = 8, 25
	var (
		mu  sync.Mutex
		all []int64
		wg  sync.WaitGroup
	)
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				id, err := s.NextID(bg, name)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				all = append(all, id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("NextID: %v", err)
	}
	slices.Sort(all)
	if len(slices.Compact(slices.Clone(all))) != workers*each {
		t.Fatalf("NextID handed out duplicates: %d distinct of %d", len(slices.Compact(all)), workers*each)
	}
	if all[0] <= 0 {
		t.Errorf("NextID returned %d, want positive ids", all[0])
	}
	other, err := s.NextID(bg, uniq("ids"))
	if err != nil || other <= 0 {
		t.Errorf("NextID of a new name = %d, %v", other, err)
	}
}

func testClaimReqID(t *testing.T, s store.Store) {
	app := uniq("app")
	t0 := ms(time.Now())
	ttl := time.Hour
	// Expiry is judged against the new claim's CreatedAt: the caller's clock, so no sleeping.
	prev, ok, err := s.ClaimReqID(bg, app, "r1", store.ReqClaim{ObjectID: "p1", CreatedAt: t0}, ttl)
	if err != nil || !ok {
		t.Fatalf("first claim = %v, %v; want claimed", ok, err)
	}
	prev, ok, err = s.ClaimReqID(bg, app, "r1", store.ReqClaim{ObjectID: "p2", CreatedAt: t0.Add(30 * time.Minute)}, ttl)
	if err != nil || ok || prev.ObjectID != "p1" || !prev.CreatedAt.Equal(t0) {
		t.Fatalf("claim within the window = %+v, %v, %v; want the first claim back", prev, ok, err)
	}
	if _, ok, err := s.ClaimReqID(bg, uniq("app"), "r1", store.ReqClaim{ObjectID: "p3", CreatedAt: t0}, ttl); err != nil || !ok {
		t.Errorf("same req_id in another app = %v, %v; want claimed", ok, err)
	}
	if _, ok, err := s.ClaimReqID(bg, app, "r2", store.ReqClaim{ObjectID: "p4", CreatedAt: t0}, ttl); err != nil || !ok {
		t.Errorf("another req_id = %v, %v; want claimed", ok, err)
	}
	_, ok, err = s.ClaimReqID(bg, app, "r1", store.ReqClaim{ObjectID: "p5", CreatedAt: t0.Add(ttl + time.Second)}, ttl)
	if err != nil || !ok {
		t.Fatalf("claim after expiry = %v, %v; want claimed", ok, err)
	}
	prev, ok, err = s.ClaimReqID(bg, app, "r1", store.ReqClaim{ObjectID: "p6", CreatedAt: t0.Add(ttl + time.Minute)}, ttl)
	if err != nil || ok || prev.ObjectID != "p5" {
		t.Errorf("claim after re-claim = %+v, %v, %v; want p5", prev, ok, err)
	}
	// Release: only by the push that holds the claim.
	rel, ok := s.(reqReleaser)
	if !ok {
		t.Fatalf("%T has no ReleaseReqID", s)
	}
	t1 := t0.Add(ttl + 2*time.Minute)
	if err := rel.ReleaseReqID(bg, app, "r1", "p6"); err != nil {
		t.Fatalf("ReleaseReqID by a non-holder: %v", err)
	}
	if prev, ok, _ := s.ClaimReqID(bg, app, "r1", store.ReqClaim{ObjectID: "p7", CreatedAt: t1}, ttl); ok || prev.ObjectID != "p5" {
		t.Errorf("a non-holder's release freed the claim: %+v %v", prev, ok)
	}
	if err := rel.ReleaseReqID(bg, app, "r1", "p5"); err != nil {
		t.Fatalf("ReleaseReqID: %v", err)
	}
	if _, ok, err := s.ClaimReqID(bg, app, "r1", store.ReqClaim{ObjectID: "p8", CreatedAt: t1}, ttl); err != nil || !ok {
		t.Errorf("claim after release = %v, %v; want claimed", ok, err)
	}
	if err := rel.ReleaseReqID(bg, app, "never-claimed", "p1"); err != nil {
		t.Errorf("ReleaseReqID of an unclaimed req_id: %v", err)
	}
}

// reqReleaser is store.Store's ReleaseReqID, asserted so the suite compiles against both the
// committed contract and its additive extension.
type reqReleaser interface {
	ReleaseReqID(ctx context.Context, appID, reqID, objectID string) error
}

func testDailyVolume(t *testing.T, s store.Store) {
	app := uniq("app")
	if v, err := s.DailyVolume(bg, app, "2024-01-02"); err != nil || v != 0 {
		t.Errorf("DailyVolume before any add = %d, %v; want 0", v, err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if _, err := s.AddDailyVolume(bg, app, "2024-01-02", 3); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	total, err := s.AddDailyVolume(bg, app, "2024-01-02", 10)
	if err != nil || total != 8*10*3+10 {
		t.Errorf("AddDailyVolume total = %d, %v; want %d", total, err, 8*10*3+10)
	}
	if v, err := s.DailyVolume(bg, app, "2024-01-02"); err != nil || v != 250 {
		t.Errorf("DailyVolume = %d, %v; want 250", v, err)
	}
	if v, _ := s.DailyVolume(bg, app, "2024-01-03"); v != 0 {
		t.Errorf("another day = %d", v)
	}
}

func testTaskProgress(t *testing.T, s store.Store) {
	job := uniq("job")
	if _, err := s.GetTaskProgress(bg, job, "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTaskProgress before put = %v, want ErrNotFound", err)
	}
	p := push.TaskProgress{JobID: job, TaskID: "t1", Cursor: []byte{0, 1, 0xFF, 'x'}, Epoch: 3,
		Counts: push.Counts{push.ChannelAPNs: {Targets: 10, Sent: 9, InvalidTokens: 1}}}
	if err := s.PutTaskProgress(bg, p); err != nil {
		t.Fatal(err)
	}
	p.Done = true
	p.Cursor = []byte("later")
	if err := s.PutTaskProgress(bg, p); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTaskProgress(bg, job, "t1")
	if err != nil || !got.Done || string(got.Cursor) != "later" || got.Epoch != 3 || got.Counts[push.ChannelAPNs].Sent != 9 {
		t.Errorf("GetTaskProgress = %+v, %v", got, err)
	}
	if _, err := s.GetTaskProgress(bg, job, "t2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another task = %v", err)
	}
}
