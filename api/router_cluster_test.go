package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
)

// TestAPIRouterCluster: with a gateway registry both routers answer with the node advertising
// the installation's push.direct partition, any live node while none does, and 503 without a
// live node; the registry is re-read once its one-second copy is old.
func TestAPIRouterCluster(t *testing.T) {
	const parts = 8
	e := newEnv(t)
	e.srv.RegisterRouter(RouterConfig{Gateways: e.st, Partitions: parts, TTL: time.Hour, Port: func() string { return "1" }})
	ours := func(iid string) resp {
		return e.do("GET", "/1.1/router?installationId="+iid, "", e.appHeaders()...)
	}
	orig := func(iid string) resp {
		return e.do("GET", "/v1/route?appId="+e.app.ID+"&installationId="+iid+"&secure=1", "")
	}
	for _, r := range []resp{ours("x"), orig("x")} {
		if r.Status != 503 || r.Code(t) != int(push.CodeUnavailable) {
			t.Fatalf("no gateway node: %d %s, want 503 code 503", r.Status, r.Body)
		}
	}
	// Two installations of different partitions, one node owning the first one's.
	i1, i2 := "iid-1", "iid-2"
	for n := 3; queue.PartitionForKey([]byte(i2), parts) == queue.PartitionForKey([]byte(i1), parts); n++ {
		i2 = fmt.Sprintf("iid-%d", n)
	}
	p1, p2 := queue.PartitionForKey([]byte(i1), parts), queue.PartitionForKey([]byte(i2), parts)
	put := func(node, url string, ps []int, until time.Time) {
		if err := e.st.PutGateway(context.Background(), store.Gateway{Node: node, URL: url, Partitions: ps, Expires: until}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "ws://a.test:8090/1.1/connect", []int{p1}, e.now.Add(time.Minute))
	put("b", "wss://b.test/1.1/connect", []int{p2}, e.now.Add(time.Minute))
	e.now = e.now.Add(2 * time.Second) // past the router's copy
	for _, tc := range []struct {
		r    resp
		want string
	}{
		{ours(i1), "ws://a.test:8090/1.1/connect"},
		{ours(i2), "wss://b.test/1.1/connect"},
		{orig(i1), "ws://a.test:8090/"},
		{orig(i2), "wss://b.test/"},
	} {
		if tc.r.Status != 200 || tc.r.JSON(t)["server"] != tc.want {
			t.Errorf("router: %d %s, want server %s", tc.r.Status, tc.r.Body, tc.want)
		}
	}
	if m := orig(i2).JSON(t); m["secondary"] != "wss://b.test/" {
		t.Errorf("original's router secondary = %v, want the owner too", m["secondary"])
	}
	// b stops: its partition is nobody's; the router answers the live node a, which moves
	// the device if it does not own it by then.
	if err := e.st.DeleteGateway(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	if r := ours(i2); r.JSON(t)["server"] != "wss://b.test/1.1/connect" {
		t.Errorf("within a second the router may answer its copy: %s", r.Body)
	}
	e.now = e.now.Add(2 * time.Second)
	if r := ours(i2); r.Status != 200 || r.JSON(t)["server"] != "ws://a.test:8090/1.1/connect" {
		t.Errorf("unowned partition: %d %s, want the live node a", r.Status, r.Body)
	}
	// a's advertisement expires without a heartbeat: no live node.
	e.now = e.now.Add(time.Minute)
	if r := orig(i1); r.Status != 503 {
		t.Errorf("every advertisement expired: %d %s, want 503", r.Status, r.Body)
	}
}
