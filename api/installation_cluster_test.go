package api

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/pushd/pushd/api/apitest"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// lookupBarrier holds the first LookupDevice of each of two API nodes until both have looked
// up, so two nodes creating the same device each see it absent before either writes.
type lookupBarrier struct {
	mu      sync.Mutex
	waiting int
	release chan struct{}
}

type barrierNode struct {
	InstallationStore
	b    *lookupBarrier
	once sync.Once
}

func (n *barrierNode) LookupDevice(ctx context.Context, appID string, kind push.IDKind, id string) (string, error) {
	oid, err := n.InstallationStore.LookupDevice(ctx, appID, kind, id)
	n.once.Do(func() {
		n.b.mu.Lock()
		n.b.waiting++
		if n.b.waiting == 2 {
			close(n.b.release)
		}
		n.b.mu.Unlock()
		select {
		case <-n.b.release:
		case <-time.After(10 * time.Second): // never taken when both nodes look up
		}
	})
	return oid, err
}

// secondNode starts another API server over e's store, as a second node of a cluster: its
// own process locks, the same data.
func (e *testEnv) secondNode(inst InstallationStore) *fasthttp.Client {
	e.t.Helper()
	srv, err := New(Config{}, Deps{Apps: e.st, Installations: inst, Now: func() time.Time { return e.now }})
	if err != nil {
		e.t.Fatal(err)
	}
	ln := fasthttputil.NewInmemoryListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunListener(ctx, ln) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("second node RunListener: %v", err)
		}
	})
	return &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
}

// Two API nodes over one store create the same deviceToken at once, each having seen it
// absent: the store's condition on the device-id row lets one create and turns the other into
// an update of that installation, so one installation holds the token.
func TestInstallationsClusterSameTokenOnce(t *testing.T) {
	b := &lookupBarrier{release: make(chan struct{})}
	e := newEnv(t, func(_ *Config, d *Deps) { d.Installations = &barrierNode{InstallationStore: d.Installations, b: b} })
	second := e.secondNode(&barrierNode{InstallationStore: e.st, b: b})
	const token = "5a6d1f0e0c2b4d3e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e"
	body := `{"deviceType":"ios","deviceToken":"` + token + `","channels":["news"]}`
	var wg sync.WaitGroup
	oids := make([]string, 2)
	for i, c := range []*fasthttp.Client{e.client, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := apitest.Do(t, c, "POST", "http://pushd.test/1.1/installations", body, e.appHeaders()...)
			if r.Status != 201 && r.Status != 200 {
				t.Errorf("node %d: %d %s, want 201 or 200", i, r.Status, r.Body)
				return
			}
			oids[i], _ = r.JSON(t)["objectId"].(string)
		}()
	}
	wg.Wait()
	var holders []string
	for bucket := 0; bucket < e.app.Settings.Buckets; bucket++ {
		err := e.st.Scan(context.Background(), store.ScanRange{AppID: e.app.ID, Bucket: bucket}, func(r *store.Row) error {
			if r.Route.DeviceToken == token {
				holders = append(holders, string(r.Cursor))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(holders) != 1 {
		t.Fatalf("%d installations hold the token after two concurrent creates on two nodes, want 1", len(holders))
	}
	oid, err := e.st.LookupDevice(context.Background(), e.app.ID, push.KindToken, token)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range oids {
		if got != "" && got != oid {
			t.Errorf("node %d answered objectId %s, but the token belongs to %s", i, got, oid)
		}
	}
}
