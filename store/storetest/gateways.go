package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/store"
)

// mine keeps the advertisements of this test's nodes (a shared store may hold others').
func mine(gs []store.Gateway, nodes ...string) []store.Gateway {
	var out []store.Gateway
	for _, g := range gs {
		if slices.Contains(nodes, g.Node) {
			out = append(out, g)
		}
	}
	return out
}

func testGateways(t *testing.T, s store.Store) {
	a, b := uniq("gw-a"), uniq("gw-b")
	now := ms(time.Now()).UTC()
	list := func(at time.Time) []store.Gateway {
		t.Helper()
		gs, err := s.Gateways(bg, at)
		if err != nil {
			t.Fatalf("Gateways: %v", err)
		}
		return mine(gs, a, b)
	}
	if err := s.PutGateway(bg, store.Gateway{Node: a, URL: "ws://a:8090/1.1/connect", Partitions: []int{0, 2}, Expires: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutGateway(bg, store.Gateway{Node: b, URL: "ws://b:8090/1.1/connect", Partitions: []int{1}, Expires: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got := list(now)
	if len(got) != 2 || got[0].URL != "ws://a:8090/1.1/connect" || !slices.Equal(got[0].Partitions, []int{0, 2}) ||
		!got[0].Expires.Equal(now.Add(time.Minute)) || got[1].URL != "ws://b:8090/1.1/connect" || !slices.Equal(got[1].Partitions, []int{1}) {
		t.Fatalf("Gateways = %+v; want a (0, 2) and b (1) until now+1m", got)
	}
	if (got[0].Node < got[1].Node) != (a < b) {
		t.Errorf("Gateways not ordered by node: %+v", got)
	}
	// A heartbeat replaces the row: the new partitions, the new expiry.
	if err := s.PutGateway(bg, store.Gateway{Node: a, URL: "ws://a:8090/1.1/connect", Partitions: []int{0, 1, 2}, Expires: now.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got = list(now.Add(90 * time.Second)) // b expired, a renewed
	if len(got) != 1 || got[0].Node != a || !slices.Equal(got[0].Partitions, []int{0, 1, 2}) {
		t.Fatalf("Gateways after a's heartbeat and b's expiry = %+v; want a alone with 0, 1, 2", got)
	}
	if err := s.DeleteGateway(bg, a); err != nil {
		t.Fatal(err)
	}
	if got := list(now); len(got) != 1 || got[0].Node != b {
		t.Fatalf("Gateways after a's delete = %+v; want b alone", got)
	}
	if err := s.DeleteGateway(bg, uniq("never-advertised")); err != nil {
		t.Errorf("DeleteGateway of an unknown node: %v", err)
	}
}
