package pushapi

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/apitest"
	"github.com/pushd/pushd/api/limit"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
)

// peer is a second API node over e's store and log: its own api.Server, Service, limiter and
// listener, as another process of the cluster would have.
type peer struct {
	e      *env
	svc    *Service
	client *fasthttp.Client
}

func (e *env) peer() *peer {
	e.t.Helper()
	set := metrics.NewSet()
	srv, err := api.New(api.Config{}, api.Deps{Apps: e.st, Installations: e.st, Metrics: set, Now: e.clock})
	if err != nil {
		e.t.Fatal(err)
	}
	svc := New(Deps{Store: e.st, Log: e.log, Limiter: limit.New(e.st, e.clock, set), Metrics: set, LogSyncsStore: true})
	svc.Register(srv)
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
	return &peer{e: e, svc: svc, client: &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}}
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

// Two API nodes each count one place left under the scheduled-push cap before either writes:
// the count after the write lets at most one stay (the other answers 503 "retry", and its
// retry is refused with 154), so the app never has more than the cap waiting.
func TestPushScheduledCapClusterWide(t *testing.T) {
	e := newEnv(t)
	nodes := []*peer{e.peer(), e.peer()}
	app := e.newApp(nil)
	ctx := context.Background()
	const limit = 3
	due := e.clock().Add(time.Hour)
	for i := range limit - 1 {
		sp := push.Scheduled{ID: int64(1000 + i), AppID: app.ID, DueAt: due, CreatedAt: e.clock(),
			Job: push.Job{ID: fmt.Sprintf("j%d", i), AppID: app.ID, NotificationObjectID: fmt.Sprintf("n%d", i), Kind: push.JobQuery}}
		if err := e.st.PutScheduled(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	// Both nodes count (one place left) before either writes.
	counted := make(chan struct{}, 2)
	for _, n := range nodes {
		n.svc.maxScheduled = limit
		var once sync.Once
		n.svc.afterScheduledCount = func() {
			once.Do(func() {
				counted <- struct{}{}
				waitfor.True(t, 10*time.Second, "both nodes counted", func() bool { return len(counted) == 2 })
			})
		}
	}
	status := make([]int, 2)
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"data":{"alert":"later"},"push_time":%q,"req_id":"race%d"}`, due.Format(time.RFC3339), i)
			for {
				r := n.do(app, master, "POST", "/1.1/push", body)
				status[i] = r.Status
				if r.Status != 503 {
					if r.Status != 200 && (r.Status != 429 || r.Code(t) != 154) {
						t.Errorf("node %d: %d %s, want 200, 503 or 429 code 154", i, r.Status, r.Body)
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	pending, err := e.st.ListScheduled(ctx, app.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != limit {
		t.Fatalf("%d scheduled pushes waiting after two nodes raced for the last place, want the cap %d (answers %v)", len(pending), limit, status)
	}
	if slices.Sort(status); status[0] != 200 || status[1] != 429 {
		t.Fatalf("answers %v, want one 200 and one 429", status)
	}
}
