package pebble

import (
	"context"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// TestPebblePresence: a connect records the node and its time, an ack the last ack, a
// disconnect the last seen and clears the node — unless another node holds the device by
// then (it moved), whose record stays. Devices and apps do not mix.
func TestPebblePresence(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	get := func(app, iid string) push.DevicePresence {
		t.Helper()
		p, err := s.DevicePresence(ctx, app, iid)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := get("app1", "d1"); p != (push.DevicePresence{}) {
		t.Fatalf("unknown device: %+v", p)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.DeviceOnline(ctx, "app1", "d1", "node-a", t0))
	must(s.DeviceAcked(ctx, "app1", "d1", t0.Add(time.Second)))
	if p := get("app1", "d1"); p != (push.DevicePresence{Node: "node-a", ConnectedAt: t0, LastAck: t0.Add(time.Second)}) {
		t.Fatalf("connected: %+v", p)
	}
	// Moved to node-b before node-a saw the disconnect: node-a's disconnect leaves node-b's.
	must(s.DeviceOnline(ctx, "app1", "d1", "node-b", t0.Add(2*time.Second)))
	must(s.DeviceOffline(ctx, "app1", "d1", "node-a", t0.Add(3*time.Second)))
	if p := get("app1", "d1"); p.Node != "node-b" || !p.ConnectedAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("after the old node's disconnect: %+v, want node-b's connection", p)
	}
	must(s.DeviceOffline(ctx, "app1", "d1", "node-b", t0.Add(4*time.Second)))
	if p := get("app1", "d1"); p != (push.DevicePresence{LastSeen: t0.Add(4 * time.Second), LastAck: t0.Add(time.Second)}) {
		t.Fatalf("disconnected: %+v", p)
	}
	if p := get("app2", "d1"); p != (push.DevicePresence{}) {
		t.Fatalf("another app's device: %+v", p)
	}
}
