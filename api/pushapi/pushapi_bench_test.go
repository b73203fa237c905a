package pushapi

import (
	"context"
	"net"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/apitest"
	"github.com/pushd/pushd/api/limit"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/store/pebble"
)

// benchServer runs the API with the push routes on loopback TCP over Pebble and the embedded
// log, and returns a master-key request template and the server address.
func benchServer(b *testing.B) (push.App, string) {
	b.Helper()
	apitest.UseStoreProcs(b)
	st, err := pebble.Open(b.TempDir(), pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	lg, err := embedded.Open(st.DB(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	set := metrics.NewSet()
	srv, err := api.New(api.Config{Addr: "127.0.0.1:0"}, api.Deps{Apps: st, Installations: st, Metrics: set})
	if err != nil {
		b.Fatal(err)
	}
	New(Deps{Store: st, Log: lg, Limiter: limit.New(st, nil, set), Metrics: set, LogSyncsStore: true}).Register(srv)
	s := push.DefaultSettings()
	s.CallsPerMinute = 1 << 30 // the bench measures intake, not the limiter's refusals
	app := api.NewApp("bench", s, time.Now())
	if err := st.CreateApp(context.Background(), app); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
		_ = lg.Close()
		_ = st.Close()
	})
	return app, srv.Addr().String()
}

const benchBody = `{"data":{"alert":"Sale starts now","title":"Shop","badge":1},"channels":["deals"],"expiration_interval":3600}`

func newPushRequest(app push.App, addr string) *fasthttp.Request {
	req := fasthttp.AcquireRequest()
	req.SetRequestURI("http://" + addr + "/1.1/push")
	req.Header.SetMethod("POST")
	req.Header.SetContentType("application/json")
	req.Header.Set(api.HeaderAppID, app.ID)
	req.Header.Set(api.HeaderKey, app.MasterKey+",master")
	req.SetBodyString(benchBody)
	return req
}

// BenchmarkPushAccept measures accepted pushes per second through HTTP, each answered only
// after its record and job are durable (synced) in Pebble.
func BenchmarkPushAccept(b *testing.B) {
	app, addr := benchServer(b)
	client := &fasthttp.Client{MaxConnsPerHost: 512, Dial: func(a string) (net.Conn, error) { return net.Dial("tcp", a) }}
	const workers = 128
	var next atomic.Int64
	var failed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := newPushRequest(app, addr)
			defer fasthttp.ReleaseRequest(req)
			res := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(res)
			for next.Add(1) <= int64(b.N) {
				if err := client.Do(req, res); err != nil || res.StatusCode() != 200 {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d pushes failed", f)
	}
	perSec := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(perSec, "pushes/s")
	// The floor: the same clients against a server that answers at once, right after.
	b.StopTimer()
	floor := floorRate(b, app, pushFloor(b), max(b.N, 10000), workers)
	b.ReportMetric(floor, "http-floor-req/s")
	b.ReportMetric(perSec/floor, "ratio")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "gomaxprocs")
}

// BenchmarkPushAcceptLatencyAt5k sends pushes at a fixed 5,000/s (open loop: each request
// starts on schedule whether or not earlier ones finished) and reports p50 and p99 latency.
func BenchmarkPushAcceptLatencyAt5k(b *testing.B) {
	app, addr := benchServer(b)
	client := &fasthttp.Client{MaxConnsPerHost: 1024, Dial: func(a string) (net.Conn, error) { return net.Dial("tcp", a) }}
	const rate = 5000
	n := max(b.N, 2*rate) // at least two seconds of load
	lat := make([]time.Duration, n)
	var failed atomic.Int64
	interval := time.Second / rate
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 1024)
	for i := 0; i < n; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d) // pacing the load generator, not waiting for a condition
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(i int, due time.Time) {
			defer func() { <-sem; wg.Done() }()
			req := newPushRequest(app, addr)
			defer fasthttp.ReleaseRequest(req)
			res := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(res)
			if err := client.Do(req, res); err != nil || res.StatusCode() != 200 {
				failed.Add(1)
			}
			lat[i] = time.Since(due) // from the scheduled start: queueing counts
		}(i, due)
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d pushes failed", f)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[n*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[n*90/100].Microseconds())/1000, "p90-ms")
	b.ReportMetric(float64(lat[n*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(lat[n-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "pushes/s")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "gomaxprocs")
}
