package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// withBadge returns in with a badge member in its document (n < 0: none).
func withBadge(t *testing.T, in push.Installation, n float64) push.Installation {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(in.Doc, &m); err != nil {
		t.Fatal(err)
	}
	if n >= 0 {
		m["badge"] = n
	}
	in.Doc, _ = json.Marshal(m)
	return in
}

func increment(t *testing.T, s store.Store, app, pushID string, oids ...string) []int64 {
	t.Helper()
	got := make([]int64, len(oids))
	if err := s.IncrementBadges(bg, app, buckets, pushID, oids, got); err != nil {
		t.Fatalf("IncrementBadges(%s, %q): %v", pushID, oids, err)
	}
	return got
}

// badgeOf reads the badge of the stored document and of every index row holding a copy.
func badgeOf(t *testing.T, s store.Store, app, oid string, channels ...string) int64 {
	t.Helper()
	got, err := s.GetInstallation(bg, app, oid)
	if err != nil {
		t.Fatalf("GetInstallation(%s): %v", oid, err)
	}
	n := push.DocBadge(got.Doc)
	for _, ch := range append([]string{""}, channels...) {
		for _, r := range scanAll(t, s, store.ScanRange{AppID: app, Channel: ch, Bucket: push.Bucket(oid, buckets)}) {
			if r.route.ObjectID == oid && push.DocBadge([]byte(r.doc)) != n {
				t.Errorf("index row (channel %q) of %s has badge %d, the document %d", ch, oid, push.DocBadge([]byte(r.doc)), n)
			}
		}
	}
	return n
}

func testBadgeIncrement(t *testing.T, s store.Store) {
	app := uniq("app")
	old := time.Now().Add(-time.Hour).UnixMilli()
	a := withBadge(t, inst("a", push.DeviceIOS, "tokA", "news"), 3)
	a.UpdatedAt = old
	b := withBadge(t, inst("b", push.DeviceIOS, "tokB"), -1)
	mustPut(t, s, app, a)
	mustPut(t, s, app, b)

	if got := increment(t, s, app, "p1", "a", "b", "gone"); got[0] != 4 || got[1] != 1 || got[2] != 1 {
		t.Fatalf("first push: badges %v, want [4 1 1]", got)
	}
	if n := badgeOf(t, s, app, "a", "news"); n != 4 {
		t.Errorf("stored badge of a = %d, want 4", n)
	}
	if n := badgeOf(t, s, app, "b"); n != 1 {
		t.Errorf("stored badge of b = %d, want 1", n)
	}
	got, _ := s.GetInstallation(bg, app, "a")
	if got.UpdatedAt != old || got.DeviceToken != "tokA" || len(got.Channels) != 1 {
		t.Errorf("a after the increment: %+v; want it unchanged but for the badge", got.Route)
	}
	wantDevice(t, s, app, push.KindToken, "tokA", "a")
	if _, err := s.GetInstallation(bg, app, "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing installation was created: %v", err)
	}

	// The same push again (a batch sent again after a crash): the same badges, no change.
	if got := increment(t, s, app, "p1", "a", "b"); got[0] != 4 || got[1] != 1 {
		t.Errorf("same push again: badges %v, want [4 1]", got)
	}
	if n := badgeOf(t, s, app, "a", "news"); n != 4 {
		t.Errorf("stored badge of a after a repeat = %d, want 4", n)
	}
	// A next push counts on; the client resetting its badge starts again from there.
	if got := increment(t, s, app, "p2", "a"); got[0] != 5 {
		t.Errorf("second push: badge %v, want 5", got)
	}
	mustPut(t, s, app, withBadge(t, inst("b", push.DeviceIOS, "tokB"), 0))
	if got := increment(t, s, app, "p3", "b"); got[0] != 1 {
		t.Errorf("after a reset to 0: badge %v, want 1", got)
	}
	// A deleted installation takes its mark with it: a new one of the same id starts fresh.
	if err := s.DeleteInstallation(bg, app, buckets, "b"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, app, withBadge(t, inst("b", push.DeviceIOS, "tokB"), 7))
	if got := increment(t, s, app, "p3", "b"); got[0] != 8 {
		t.Errorf("recreated installation: badge %v, want 8", got)
	}
	// Other apps are untouched.
	other := uniq("app")
	mustPut(t, s, other, withBadge(t, inst("a", push.DeviceIOS, "tokA"), 10))
	if got := increment(t, s, other, "p1", "a"); got[0] != 11 {
		t.Errorf("other app: badge %v, want 11", got)
	}
	if n := badgeOf(t, s, app, "a", "news"); n != 5 {
		t.Errorf("badge of a after the other app's push = %d, want 5", n)
	}
}

func testDeadTokens(t *testing.T, s store.Store) {
	app, other := uniq("app"), uniq("app")
	since := ms(time.Now().Add(-time.Hour))
	if _, err := s.DeadToken(bg, app, "dead1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeadToken before any mark: %v, want ErrNotFound", err)
	}
	for _, id := range []string{"dead1", "dead2"} {
		if err := s.MarkDeadToken(bg, app, id, since); err != nil {
			t.Fatalf("MarkDeadToken: %v", err)
		}
	}
	if got, err := s.DeadToken(bg, app, "dead1"); err != nil || !got.Equal(since) {
		t.Errorf("DeadToken = %v, %v; want %v", got, err, since)
	}
	if _, err := s.DeadToken(bg, other, "dead1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeadToken of another app: %v, want ErrNotFound", err)
	}
	// Registering the token again forgets the mark; a refresh of an installation that
	// already holds an id writes nothing about it.
	mustPut(t, s, app, inst("o1", push.DeviceIOS, "dead1"))
	if _, err := s.DeadToken(bg, app, "dead1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeadToken after the token was registered: %v, want ErrNotFound", err)
	}
	if got, err := s.DeadToken(bg, app, "dead2"); err != nil || !got.Equal(since) {
		t.Errorf("DeadToken of another token after a registration = %v, %v; want %v", got, err, since)
	}
	// An installation gaining the id by an update forgets it too.
	mustPut(t, s, app, inst("o2", push.DeviceIOS, "fresh"))
	mustPut(t, s, app, inst("o2", push.DeviceIOS, "dead2"))
	if _, err := s.DeadToken(bg, app, "dead2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeadToken after an update took the token: %v, want ErrNotFound", err)
	}
	// A later mark replaces an earlier one.
	later := since.Add(time.Minute)
	if err := s.MarkDeadToken(bg, app, "dead3", since); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDeadToken(bg, app, "dead3", later); err != nil {
		t.Fatal(err)
	}
	if got, err := s.DeadToken(bg, app, "dead3"); err != nil || !got.Equal(later) {
		t.Errorf("DeadToken after a second mark = %v, %v; want %v", got, err, later)
	}
}
