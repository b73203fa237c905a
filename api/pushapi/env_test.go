package pushapi

import (
	"context"
	"encoding/json"
	"github.com/pushd/pushd/api/apitest"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/limit"
	"github.com/pushd/pushd/internal/jointaccept"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/store/pebble"
)

// env is the real API server (fasthttp, in-memory listener) with the push routes, over a
// real Pebble store and the embedded log.
type env struct {
	t      *testing.T
	st     *pebble.Store
	log    *embedded.Log
	client *fasthttp.Client
	mu     sync.Mutex
	now    time.Time
	close  func()
	svc    *Service
}

func (e *env) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	e.now = e.now.Add(d)
	e.mu.Unlock()
}

// newEnv starts an env on a temporary directory; each opt may change the service's Deps.
func newEnv(t *testing.T, opts ...func(*Deps)) *env {
	t.Helper()
	return newEnvAt(t, t.TempDir(), opts...)
}

// newEnvAt is newEnv on a given data directory; close stops it early (it is idempotent).
func newEnvAt(t *testing.T, dir string, opts ...func(*Deps)) *env {
	t.Helper()
	st, err := pebble.Open(dir, pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lg, err := embedded.Open(st.DB(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, log: lg, now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	set := metrics.NewSet()
	srv, err := api.New(api.Config{}, api.Deps{Apps: st, Installations: st, Metrics: set, Now: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	joint, err := jointaccept.New(st, lg)
	if err != nil {
		t.Fatal(err)
	}
	// As pushd serve wires them: pushes written whole (internal/jointaccept).
	deps := Deps{Store: st, Log: lg, Limiter: limit.New(st, e.clock, set), Metrics: set, LogSyncsStore: true, Joint: joint}
	for _, o := range opts {
		o(&deps)
	}
	e.svc = New(deps)
	e.svc.Register(srv)
	ln := fasthttputil.NewInmemoryListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunListener(ctx, ln) }()
	e.client = &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	var once sync.Once
	e.close = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("RunListener: %v", err)
			}
			if err := lg.Close(); err != nil {
				t.Errorf("log close: %v", err)
			}
			if err := st.Close(); err != nil {
				t.Errorf("store close: %v", err)
			}
		})
	}
	t.Cleanup(e.close)
	return e
}

// newApp creates an app with the given settings changes.
func (e *env) newApp(change func(*push.AppSettings)) push.App {
	e.t.Helper()
	return e.newAppWith(func(a *push.App) {
		if change != nil {
			change(&a.Settings)
		}
	})
}

// newAppWith creates an app changed by change.
func (e *env) newAppWith(change func(*push.App)) push.App {
	e.t.Helper()
	s := push.DefaultSettings()
	s.Buckets = 16
	app := api.NewApp("test", s, e.clock())
	change(&app)
	if err := e.st.CreateApp(context.Background(), app); err != nil {
		e.t.Fatal(err)
	}
	return app
}

type resp = apitest.Resp

type who int

const (
	master who = iota
	client
)

func (e *env) do(app push.App, k who, method, path, body string, hdr ...string) resp {
	e.t.Helper()
	key := app.AppKey
	if k == master {
		key = app.MasterKey + ",master"
	}
	return apitest.Do(e.t, e.client, method, "http://pushd.test"+path, body,
		append([]string{api.HeaderAppID, app.ID, api.HeaderKey, key}, hdr...)...)
}

// jobs reads every job appended to push.jobs so far, through a fresh consumer group. Jobs are
// durable before the API answers, so a marker appended to every partition after them marks
// the end: once the consumer has seen all markers it has seen every job.
func (e *env) jobs() []push.Job {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var out []push.Job
	markers := 0
	done := make(chan struct{})
	group := "test-" + push.NewObjectID()
	marker := "marker-" + group
	go func() {
		defer close(done)
		_ = e.log.Consume(ctx, queue.TopicJobs, group, func(_ context.Context, m queue.Message) error {
			var j push.Job
			if err := json.Unmarshal(m.Value, &j); err != nil {
				e.t.Errorf("job is not JSON: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case j.ID == marker:
				markers++
			case !strings.HasPrefix(j.ID, "marker-"):
				out = append(out, j)
			}
			return nil
		})
	}()
	b, _ := json.Marshal(push.Job{ID: marker})
	parts := e.log.Partitions(queue.TopicJobs)
	for p := 0; p < parts; p++ {
		if err := e.log.Append(context.Background(), queue.TopicJobs, queue.Record{Partition: p, Value: b}); err != nil {
			e.t.Fatal(err)
		}
	}
	waitfor.True(e.t, 10*time.Second, "the end of push.jobs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return markers == parts
	})
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return out
}
