//go:build unix

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/api/apitest"
	"github.com/pushd/pushd/bench/procstat"
	"github.com/pushd/pushd/loadtest/intake"
	"github.com/pushd/pushd/store/pebble"
)

// BenchmarkAPIInstallationUpsert measures POST /1.1/installations through real HTTP on
// loopback (a fasthttp server, real Pebble with synced batches, and lean HTTP/1.1 clients). Each op is an
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
	// PUSHD_BENCH_NO_CEILING=1 skips the ceiling, for scripts/bench-ab.sh, which runs two builds
	// at once and compares their CPU per upsert.
	rounds := max(1, b.N/8000)
	ceilingN := max(b.N/2, 10000)
	withCeiling := os.Getenv("PUSHD_BENCH_NO_CEILING") == ""
	var upsertTime, ceilingTime, cpu time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for r := range rounds {
		b.StopTimer()
		if withCeiling {
			ceilingTime += ceiling.run(b, share(ceilingN, rounds, r))
		}
		b.StartTimer()
		cpu0 := procstat.CPU(b)
		upsertTime += upserts.run(b, share(b.N, rounds, r))
		cpu += procstat.CPU(b) - cpu0
	}
	b.StopTimer()
	perSec := float64(b.N) / upsertTime.Seconds()
	b.ReportMetric(perSec, "upserts/s")
	if withCeiling {
		ceilingPerSec := float64(ceilingN) / ceilingTime.Seconds()
		b.ReportMetric(ceilingPerSec, "http-ceiling-req/s")
		b.ReportMetric(perSec/ceilingPerSec, "ratio")
	}
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
//
// The clients speak HTTP/1.1 by hand, as load generators such as wrk do: a request is one
// write of prepared bytes, a response is read by its status line and Content-Length. The
// clients share the server's two cores here, where real clients would not, so the less CPU
// they take, the closer the figure is to what the server does on its own.
type upsertLoad struct {
	addr  string
	head  []byte // the request up to the value of Content-Length
	conns []*intake.Conn
	seq   atomic.Int64 // the last request number sent; runs continue from it
}

func newUpsertLoad(appID, appKey, addr string, clients int) *upsertLoad {
	head := "POST /1.1/installations HTTP/1.1\r\nHost: " + addr +
		"\r\nContent-Type: application/json\r\n" + HeaderAppID + ": " + appID +
		"\r\n" + HeaderKey + ": " + appKey + "\r\nContent-Length: "
	return &upsertLoad{addr: addr, head: []byte(head), conns: make([]*intake.Conn, clients)}
}

func (l *upsertLoad) close() {
	for _, c := range l.conns {
		if c != nil {
			_ = c.Close()
		}
	}
}

// request appends to dst the upsert numbered i: device dev-(i mod 10,000), with one of
// seven channels besides "news" and an appVersion that changes every time.
func (l *upsertLoad) request(dst, body []byte, i int64) (req, newBody []byte) {
	body = fmt.Appendf(body[:0], `{"deviceType":"android","installationId":"dev-%d","channels":["news","c%d"],"appVersion":"1.%d"}`, i%10000, i%7, i)
	dst = strconv.AppendInt(append(dst, l.head...), int64(len(body)), 10)
	return append(append(dst, "\r\n\r\n"...), body...), body
}

// run sends the next n upserts and returns how long they took.
func (l *upsertLoad) run(b *testing.B, n int) time.Duration {
	last := l.seq.Load() + int64(n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range l.conns {
		if l.conns[i] == nil {
			c, err := net.Dial("tcp", l.addr)
			if err != nil {
				b.Fatal(err)
			}
			l.conns[i] = intake.NewConn(c)
		}
		wg.Add(1)
		go func(c *intake.Conn) {
			defer wg.Done()
			var req, body []byte
			for {
				i := l.seq.Add(1)
				if i > last {
					return
				}
				req, body = l.request(req[:0], body, i)
				code, res, err := c.RoundTrip(req)
				if err != nil {
					b.Error(err)
					return
				}
				if code != 200 && code != 201 {
					b.Errorf("status %d: %s", code, res)
					return
				}
			}
		}(l.conns[i])
	}
	wg.Wait()
	l.seq.Store(last) // goroutines overshoot by one Add each
	return time.Since(start)
}

// httpCeiling starts the intake floor (a fasthttp server) on loopback, closed when b ends, that reads each
// request and answers 200 with a body shaped like an upsert's reply, and returns its address.
func httpCeiling(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	reply := []byte(`{"updatedAt":"2026-11-23T00:00:00.000Z","objectId":"0123456789abcdef01234567"}`)
	go func() { _ = intake.ServeReply(ln, reply) }()
	b.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String()
}

// benchClients is the client concurrency: PUSHD_BENCH_CLIENTS or 128.
func benchClients() int {
	if n, err := strconv.Atoi(os.Getenv("PUSHD_BENCH_CLIENTS")); err == nil && n > 1 {
		return n
	}
	return 128
}

// TestBenchClientUpserts checks the benchmark's hand-written client against the real server:
// its first request for a device creates the installation, the next refreshes the same one,
// and both are read back with the body the client sent.
func TestBenchClientUpserts(t *testing.T) {
	e := newEnv(t)
	conn, err := e.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := intake.NewConn(conn)
	l := newUpsertLoad(e.app.ID, e.app.AppKey, "pushd.test", 1)
	var req, body []byte
	var oid string
	for i, want := range []int{201, 200} {
		n := int64(3 + i*10000) // the same device, dev-3
		req, body = l.request(req[:0], body, n)
		code, res, err := c.RoundTrip(req)
		if err != nil || code != want {
			t.Fatalf("upsert %d: %d %s, %v; want %d", n, code, res, err, want)
		}
		var got struct{ ObjectID string }
		if err := json.Unmarshal(res, &got); err != nil || got.ObjectID == "" {
			t.Fatalf("upsert %d: body %s: %v", n, res, err)
		}
		if oid != "" && got.ObjectID != oid {
			t.Fatalf("upsert %d refreshed %s, want %s", n, got.ObjectID, oid)
		}
		oid = got.ObjectID
		doc := e.get(oid)
		if doc["installationId"] != "dev-3" || doc["appVersion"] != fmt.Sprintf("1.%d", n) {
			t.Fatalf("upsert %d stored %v", n, doc)
		}
	}
	if n := e.count(e.app.ID, e.app.Settings.Buckets); n != 1 {
		t.Fatalf("%d installations, want 1", n)
	}
}
