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
	"github.com/pushd/pushd/store/pebble"
)

// BenchmarkAPIInstallationUpsert measures POST /1.1/installations through real HTTP on
// loopback (fasthttp client and server, real Pebble with synced batches). Each op is an
// upsert of one of 10,000 devices (the first pass creates, later passes update), from 128
// concurrent clients, so Pebble group-commits concurrent synced batches.
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
	addr := srv.Addr().String()
	clients := benchClients()
	client := &fasthttp.Client{
		MaxConnsPerHost: clients,
		Dial:            func(a string) (net.Conn, error) { return net.Dial("tcp", a) },
	}
	var seq atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := fasthttp.AcquireRequest()
			res := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			req.SetRequestURI("http://" + addr + "/1.1/installations")
			req.Header.SetMethod("POST")
			req.Header.SetContentType("application/json")
			req.Header.Set(HeaderAppID, app.ID)
			req.Header.Set(HeaderKey, app.AppKey)
			var body []byte
			for {
				n := seq.Add(1)
				if n > int64(b.N) {
					return
				}
				body = fmt.Appendf(body[:0], `{"deviceType":"android","installationId":"dev-%d","channels":["news","c%d"],"appVersion":"1.%d"}`, n%10000, n%7, n)
				req.SetBody(body)
				if err := client.Do(req, res); err != nil {
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
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "upserts/s")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "gomaxprocs")
}

// benchClients is the client concurrency: PUSHD_BENCH_CLIENTS or 128.
func benchClients() int {
	if n, err := strconv.Atoi(os.Getenv("PUSHD_BENCH_CLIENTS")); err == nil && n > 1 {
		return n
	}
	return 128
}
