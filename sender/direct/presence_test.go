package direct_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
)

// TestDirectPresenceInCluster: an installation is online for own_first when the gateway node
// that recorded its connection advertises itself; a record of a node gone from the registry
// (it died) is not; the registry is read once per second at most, and the connections once
// per call for the whole batch.
func TestDirectPresenceInCluster(t *testing.T) {
	ctx := context.Background()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	now := time.Now()
	for iid, node := range map[string]string{"d1": "gw-live", "d2": "gw-dead"} {
		if err := st.DeviceOnline(ctx, "app", iid, node, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutGateway(ctx, store.Gateway{Node: "gw-live", URL: "ws://a/1.1/connect", Partitions: []int{0}, Expires: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	p := direct.NewPresence(st, nil)
	clock := now
	direct.SetPresenceClock(p, func() time.Time { return clock })
	ask := func() []bool {
		t.Helper()
		online := []bool{true, true, true}
		if err := p.Online(ctx, "app", []string{"d1", "d2", "d3"}, online); err != nil {
			t.Fatal(err)
		}
		return online
	}
	if got := ask(); !slices.Equal(got, []bool{true, false, false}) {
		t.Errorf("online = %v, want only d1 (its node advertises; d2's node is gone, d3 never connected)", got)
	}
	// The live node stops: within the cache's second it still counts, after it no longer.
	if err := st.DeleteGateway(ctx, "gw-live"); err != nil {
		t.Fatal(err)
	}
	clock = now.Add(500 * time.Millisecond)
	if got := ask(); !slices.Equal(got, []bool{true, false, false}) {
		t.Errorf("online within the registry cache = %v, want d1 still", got)
	}
	clock = now.Add(2 * time.Second)
	if got := ask(); !slices.Equal(got, []bool{false, false, false}) {
		t.Errorf("online after the registry changed = %v, want none", got)
	}
}
