package pushapi

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/apitest"
	"github.com/pushd/pushd/api/limit"
	"github.com/pushd/pushd/push"
)

// peer is a second API node over e's store and log: its own api.Server, Service, limiter and
// listener, as another process of the cluster would have.
type peer struct {
	e      *env
	client *fasthttp.Client
}

func (e *env) peer() *peer {
	e.t.Helper()
	set := metrics.NewSet()
	srv, err := api.New(api.Config{}, api.Deps{Apps: e.st, Installations: e.st, Metrics: set, Now: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	New(Deps{Store: e.st, Log: e.log, Limiter: limit.New(e.st, e.clock, set), Metrics: set, LogSyncsStore: true}).Register(srv)
	ln := fasthttputil.NewInmemoryListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunListener(ctx, ln) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("peer RunListener: %v", err)
		}
	})
	return &peer{e: e, client: &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}}
}

func (p *peer) do(app push.App, k who, method, path, body string) resp {
	p.e.t.Helper()
	key := app.AppKey
	if k == master {
		key = app.MasterKey + ",master"
	}
	return apitest.Do(p.e.t, p.client, method, "http://pushd.test"+path, body, api.HeaderAppID, app.ID, api.HeaderKey, key)
}

// Two API nodes over one store, sent twice the app's calls per minute between them at once:
// exactly callsPerMinute are accepted and every other call is 429 with code 429. 40 reserves
// one call at a time; 640 in slices of 20 (limit.sliceOf).
func TestPushRateLimitClusterWideExact(t *testing.T) {
	for _, perMinute := range []int{40, 640} {
		t.Run(fmt.Sprint(perMinute), func(t *testing.T) { testClusterWideExact(t, perMinute) })
	}
}

func testClusterWideExact(t *testing.T, perMinute int) {
	e := newEnv(t)
	nodes := []*peer{e.peer(), e.peer()}
	app := e.newApp(func(s *push.AppSettings) { s.CallsPerMinute = perMinute })
	const workers = 4
	var (
		mu       sync.Mutex
		ok, over int
		wg       sync.WaitGroup
	)
	for n := range nodes {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perMinute / workers {
					r := nodes[n].do(app, master, "POST", "/1.1/push", okPush)
					mu.Lock()
					switch {
					case r.Status == 200:
						ok++
					case r.Status == 429 && r.Code(t) == 429:
						over++
					default:
						t.Errorf("node %d: %d %s, want 200 or 429 code 429", n, r.Status, r.Body)
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if ok != perMinute || over != perMinute {
		t.Fatalf("%d accepted, %d refused across two nodes; want %d and %d", ok, over, perMinute, perMinute)
	}
	if n := len(e.jobs()); n != perMinute {
		t.Fatalf("%d jobs, want %d", n, perMinute)
	}
}
