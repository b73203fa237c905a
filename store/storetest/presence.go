package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

func presence(t *testing.T, s store.Store, app, iid string) push.DevicePresence {
	t.Helper()
	p, err := s.DevicePresence(bg, app, iid)
	if err != nil {
		t.Fatalf("DevicePresence(%s): %v", iid, err)
	}
	return p
}

func connected(t *testing.T, s store.Store, app string, iids ...string) []string {
	t.Helper()
	nodes := make([]string, len(iids))
	for i := range nodes {
		nodes[i] = "stale" // ConnectedNodes must overwrite every entry
	}
	if err := s.ConnectedNodes(bg, app, iids, nodes); err != nil {
		t.Fatalf("ConnectedNodes: %v", err)
	}
	return nodes
}

// testPresence: connect, ack and disconnect are recorded; a disconnect recorded by a node the
// device has left does not end the newer connection on another node; ConnectedNodes answers a
// batch; apps are apart.
func testPresence(t *testing.T, s store.Store) {
	app, other := uniq("app"), uniq("app")
	t0 := ms(time.Now()).UTC()
	if p := presence(t, s, app, "d1"); p != (push.DevicePresence{}) {
		t.Fatalf("presence of a device never seen = %+v, want zero", p)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.DeviceOnline(bg, app, "d1", "n1", t0))
	must(s.DeviceAcked(bg, app, "d1", t0.Add(time.Second)))
	if p := presence(t, s, app, "d1"); p != (push.DevicePresence{Node: "n1", ConnectedAt: t0, LastAck: t0.Add(time.Second)}) {
		t.Errorf("presence while connected = %+v", p)
	}
	if got := connected(t, s, app, "d1", "d2"); !slices.Equal(got, []string{"n1", ""}) {
		t.Errorf("ConnectedNodes = %q, want [n1 \"\"]", got)
	}
	if got := connected(t, s, other, "d1"); !slices.Equal(got, []string{""}) {
		t.Errorf("ConnectedNodes of another app = %q, want none", got)
	}
	// The device moves to n2; n1 records its end afterwards.
	must(s.DeviceOnline(bg, app, "d1", "n2", t0.Add(2*time.Second)))
	must(s.DeviceOffline(bg, app, "d1", "n1", t0.Add(3*time.Second)))
	if p := presence(t, s, app, "d1"); p.Node != "n2" || !p.ConnectedAt.Equal(t0.Add(2*time.Second)) || !p.LastSeen.Equal(t0.Add(3*time.Second)) {
		t.Errorf("presence after a move and the old node's disconnect = %+v, want n2 since t0+2s, seen t0+3s", p)
	}
	must(s.DeviceOffline(bg, app, "d1", "n2", t0.Add(4*time.Second)))
	if p := presence(t, s, app, "d1"); p != (push.DevicePresence{LastSeen: t0.Add(4 * time.Second), LastAck: t0.Add(time.Second)}) {
		t.Errorf("presence after disconnect = %+v", p)
	}
	if got := connected(t, s, app, "d1"); !slices.Equal(got, []string{""}) {
		t.Errorf("ConnectedNodes after disconnect = %q, want none", got)
	}
}

// testPresenceDeleted: deleting an installation, or sweeping it as inactive, removes the
// presence of its installationId; another installation's stays.
func testPresenceDeleted(t *testing.T, s store.Store) {
	app := uniq("app")
	now := ms(time.Now()).UTC()
	mustPut(t, s, app, inst("o1", push.DeviceAndroid, "iid1"))
	mustPut(t, s, app, inst("o2", push.DeviceAndroid, "iid2"))
	old := inst("o3", push.DeviceAndroid, "iid3")
	old.UpdatedAt = now.Add(-100 * 24 * time.Hour).UnixMilli()
	mustPut(t, s, app, old)
	for _, iid := range []string{"iid1", "iid2", "iid3"} {
		if err := s.DeviceOnline(bg, app, iid, "n1", now); err != nil {
			t.Fatal(err)
		}
		if err := s.DeviceAcked(bg, app, iid, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeviceOffline(bg, app, "iid1", "n1", now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeviceOnline(bg, app, "iid1", "n1", now.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteInstallation(bg, app, buckets, "o1"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteInactive(bg, app, buckets, now.Add(-push.InactiveAfter), 100); err != nil || n != 1 {
		t.Fatalf("DeleteInactive = %d, %v; want 1", n, err)
	}
	for _, iid := range []string{"iid1", "iid3"} {
		if p := presence(t, s, app, iid); p != (push.DevicePresence{}) {
			t.Errorf("presence of deleted installation %s = %+v, want none", iid, p)
		}
	}
	if p := presence(t, s, app, "iid2"); p.Node != "n1" || !p.LastAck.Equal(now) {
		t.Errorf("presence of the kept installation = %+v, want connected to n1", p)
	}
	if got := connected(t, s, app, "iid1", "iid2", "iid3"); !slices.Equal(got, []string{"", "n1", ""}) {
		t.Errorf("ConnectedNodes after deletes = %q, want only iid2", got)
	}
}
