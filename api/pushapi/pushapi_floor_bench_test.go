package pushapi

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/loadtest/intake"
	"github.com/pushd/pushd/push"
)

// pushFloor starts the intake load test's floor on loopback, closed when b ends (a fasthttp
// server that answers every request 200 with a body shaped like an accepted push's), and
// returns its address: the floor BenchmarkPushAccept reports its rate against (what HTTP on
// loopback alone reaches with the same client at that moment; this machine's speed drifts).
func pushFloor(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = intake.ServeFloor(ln) }()
	b.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String()
}

// floorRate sends n push requests to addr from workers clients as BenchmarkPushAccept does
// and returns the requests per second.
func floorRate(b *testing.B, app push.App, addr string, n, workers int) float64 {
	client := &fasthttp.Client{MaxConnsPerHost: 512, Dial: func(a string) (net.Conn, error) { return net.Dial("tcp", a) }}
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := newPushRequest(app, addr)
			defer fasthttp.ReleaseRequest(req)
			res := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseResponse(res)
			for next.Add(1) <= int64(n) {
				if err := client.Do(req, res); err != nil || res.StatusCode() != 200 {
					b.Errorf("floor request: %v, status %d", err, res.StatusCode())
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}
