//go:build unix

package api

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/api/apitest"
	"github.com/pushd/pushd/bench/procstat"
	"github.com/pushd/pushd/store/pebble"
)

// BenchmarkAPIInstallationUpsert measures POST /1.1/installations through real HTTP on
// loopback (fasthttp client and server, real Pebble with synced batches). Each op is an
// upsert of one of 10,000 devices (the first pass creates, later passes update), from 128
// concurrent clients, so Pebble group-commits concurrent synced batches.
//
// This machine's speed drifts by up to 2× within minutes, so the same build reports very
// different upserts/s. The benchmark therefore also drives the same clients against a fasthttp
// server that answers every POST with an upsert-sized reply and does nothing else:
// http-ceiling-req/s is what HTTP on loopback alone reaches, which tells in which phase of the
// drift a figure was taken. The two loads take turns in rounds of a fraction of a second, so
// both meet the same moments of the drift, and ratio (upserts/s ÷ http-ceiling-req/s) is the
// figure to compare across runs. cpu-µs/upsert counts the whole process (clients included).
func BenchmarkAPIInstallationUpsert(b *testing.B) {
	apitest.UseStoreProcs(b)
	st, err := pebble.Open(b.TempDir(), pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv, err := New(Config{Addr: "127.0.0.1:0"}, Deps{Apps: st, Installations: st})
	if err != nil {
		b.Fatal(err)
	}
	app, _, err := CreateApp(context.Background(), st, AppRequest{Name: ptr("bench")}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()

	clients := benchClients()
	upserts := newUpsertLoad(app.ID, app.AppKey, srv.Addr().String(), clients)
	ceiling := newUpsertLoad(app.ID, app.AppKey, httpCeiling(b), clients)
	defer upserts.close()
	defer ceiling.close()

	// Rounds of about 8,000 upserts (well under a second) and half as many ceiling requests.
	rounds := max(1, b.N/8000)
	ceilingN := max(b.N/2, 10000)
	var upsertTime, ceilingTime, cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for r := range rounds {
		b.StopTimer()
		ceilingTime += ceiling.run(b, share(ceilingN, rounds, r))
		b.StartTimer()
		cpu0 := procstat.CPU(b)
		upsertTime += upserts.run(b, share(b.N, rounds, r))
		cpu += procstat.CPU(b) - cpu0
	}
	b.StopTimer()
	perSec := float64(b.N) / upsertTime.Seconds()
	ceilingPerSec := float64(ceilingN) / ceilingTime.Seconds()
	b.ReportMetric(perSec, "upserts/s")
	b.ReportMetric(ceilingPerSec, "http-ceiling-req/s")
	b.ReportMetric(perSec/ceilingPerSec, "ratio")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/upsert")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "gomaxprocs")
}

// share is round r's part of n split over rounds: n/rounds each, the last takes the rest.
func share(n, rounds, r int) int {
	if r == rounds-1 {
		return n - n/rounds*(rounds-1)
	}
	return n / rounds
}

// upsertLoad is the benchmark's clients against one address: each posts installation upserts
// of one of 10,000 devices, one request at a time, over its own keep-alive connection, which
// it keeps from one run to the next.
type upsertLoad struct {
	appID, appKey, addr string
	clients             int
	client              *fasthttp.Client
	seq                 atomic.Int64 // the last request number sent; runs continue from it
}

func newUpsertLoad(appID, appKey, addr string, clients int) *upsertLoad {
	return &upsertLoad{
		appID: appID, appKey: appKey, addr: addr, clients: clients,
		client: &fasthttp.Client{
			MaxConnsPerHost: clients,
			Dial:            func(a string) (net.Conn, error) { return net.Dial("tcp", a) },
		},
	}
}

func (l *upsertLoad) close() { l.client.CloseIdleConnections() }

// run sends the next n upserts and returns how long they took.
func (l *upsertLoad) run(b *testing.B, n int) time.Duration {
	last := l.seq.Load() + int64(n)
	start := time.Now()
	var wg sync.WaitGroup
	for range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := fasthttp.AcquireRequest()
			res := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			req.SetRequestURI("http://" + l.addr + "/1.1/installations")
			req.Header.SetMethod("POST")
			req.Header.SetContentType("application/json")
			req.Header.Set(HeaderAppID, l.appID)
			req.Header.Set(HeaderKey, l.appKey)
			var body []byte
			for {
				i := l.seq.Add(1)
				if i > last {
					return
				}
				body = fmt.Appendf(body[:0], `{"deviceType":"android","installationId":"dev-%d","channels":["news","c%d"],"appVersion":"1.%d"}`, i%10000, i%7, i)
				req.SetBody(body)
				if err := l.client.Do(req, res); err != nil {
					b.Error(err)
					return
				}
				if c := res.StatusCode(); c != 200 && c != 201 {
					b.Errorf("status %d: %s", c, res.Body())
					return
				}
			}
		}()
	}
	wg.Wait()
	l.seq.Store(last) // goroutines overshoot by one Add each
	return time.Since(start)
}

// httpCeiling starts a fasthttp server on loopback, stopped when b ends, that reads each
// request and answers 200 with a body shaped like an upsert's reply, and returns its address.
func httpCeiling(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	reply := []byte(`{"updatedAt":"2026-11-23T00:00:00.000Z","objectId":"0123456789abcdef01234567"}`)
	s := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.SetContentType("application/json; charset=utf-8")
			ctx.SetBody(reply)
		},
		ReadTimeout:  time.Minute,
		WriteTimeout: time.Minute,
	}
	go func() { _ = s.Serve(ln) }()
	b.Cleanup(func() { _ = s.Shutdown() })
	return ln.Addr().String()
}

// benchClients is the client concurrency: PUSHD_BENCH_CLIENTS or 128.
func benchClients() int {
	if n, err := strconv.Atoi(os.Getenv("PUSHD_BENCH_CLIENTS")); err == nil && n > 1 {
		return n
	}
	return 128
}
