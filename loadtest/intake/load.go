// Package intake owns the intake load test's generator: HTTP/1.1 requests over many
// keep-alive connections to pushd's REST API (or to the floor, a server that answers every
// request at once), in a closed loop (every connection sends its next request when the last
// one is answered: the throughput figure) or an open loop (requests start on a fixed schedule
// whether or not earlier ones were answered: the latency figure, queueing included).
//
// The client speaks HTTP/1.1 by hand, as wrk does: a request is one write of bytes built into
// a reused buffer, a response is read by its status line and Content-Length. It shares the
// machine with the server under test, so the less CPU it takes the closer the figures are to
// the server's own.
//
// Concurrency: Run starts one goroutine per connection (plus the pacer of an open loop) and
// waits for all of them; a Load is used by one Run at a time.
package intake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// RequestFunc appends request number i (whole: request line, headers, body) to dst.
type RequestFunc func(dst []byte, i int64) []byte

// Load is one request shape against one address.
type Load struct {
	Addr    string
	Conns   int         // keep-alive connections, each with one request in flight
	Request RequestFunc // request i, for i from 0
	// OK says whether a status code counts as served (e.g. 200 and 201 for upserts).
	OK func(code int) bool
	// Rate, when positive, makes the loop open: request i is due at start + i/Rate and its
	// latency runs from then. 0: closed loop.
	Rate int
}

// Result is what one Run measured.
type Result struct {
	Requests int64         // requests answered
	Failed   int64         // answered with a status OK refused
	Elapsed  time.Duration // first request's start to last answer
	// Latencies of every request, sorted: from its send (closed loop) or its due time (open loop).
	Latencies []time.Duration
	// FirstError is the first status or transport failure, for the report.
	FirstError string
	// Windows are an open loop's requests by WindowSpan of due time, in order (nil for a
	// closed loop): a tail made of a few stalls shows as a few windows full of slow requests,
	// one of a load the server cannot keep up with as many windows with a few.
	Windows []Window
}

// WindowSpan is the due time one Window covers; SlowLatency is the latency a Window counts
// requests over (the p99 target of the intake, issue 16).
const (
	WindowSpan  = 50 * time.Millisecond
	SlowLatency = 10 * time.Millisecond
)

// Window is the open loop's requests due in one WindowSpan.
type Window struct {
	Start    time.Time     // when the first of them was due (wall clock, to line up with logs)
	Requests int           // due in the window
	Slow     int           // slower than SlowLatency
	Max      time.Duration // the slowest
}

// windows groups the open loop's latencies (lat[k] of the request due at start + k×interval) by
// WindowSpan of due time.
func windows(lat []time.Duration, start time.Time, interval time.Duration) []Window {
	per := max(int(WindowSpan/interval), 1)
	out := make([]Window, 0, len(lat)/per+1)
	for i := 0; i < len(lat); i += per {
		w := Window{Start: start.Add(time.Duration(i) * interval)}
		for _, d := range lat[i:min(i+per, len(lat))] {
			w.Requests++
			if d > SlowLatency {
				w.Slow++
			}
			w.Max = max(w.Max, d)
		}
		out = append(out, w)
	}
	return out
}

// PerSecond is the answered requests per second.
func (r *Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Percentile is latency percentile p (0–100) of the run, 0 without requests.
func (r *Result) Percentile(p float64) time.Duration {
	n := len(r.Latencies)
	if n == 0 {
		return 0
	}
	i := int(float64(n)*p/100+0.5) - 1
	return r.Latencies[min(max(i, 0), n-1)]
}

// Run sends requests first to first+n-1 and returns once all are answered, or ctx ends, or a
// connection fails (a transport error ends the run: it would skew the figures).
func (l *Load) Run(ctx context.Context, first int64, n int) (*Result, error) {
	if l.Conns < 1 || n < 1 {
		return nil, errors.New("cannot run a load without connections or requests")
	}
	conns := make([]*Conn, l.Conns)
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.nc.Close()
			}
		}
	}()
	var d net.Dialer
	for i := range conns {
		nc, err := d.DialContext(ctx, "tcp", l.Addr)
		if err != nil {
			return nil, fmt.Errorf("cannot connect to %s: %w", l.Addr, err)
		}
		conns[i] = NewConn(nc)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// Unblock reads and writes when the run is cancelled.
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			_ = c.nc.SetDeadline(time.Unix(1, 0))
		}
	})
	defer stop()

	lat := make([]time.Duration, n)
	var next atomic.Int64 // closed loop: the next request's offset
	var dues chan int     // open loop: offsets of due requests, in order
	var failed atomic.Int64
	var firstErr atomic.Pointer[string]
	noteErr := func(s string) { firstErr.CompareAndSwap(nil, &s) }
	start := time.Now()
	interval := time.Duration(0)
	if l.Rate > 0 {
		interval = time.Second / time.Duration(l.Rate)
		dues = make(chan int, n)
		go pace(ctx, dues, start, interval, n)
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var req []byte
			for {
				var k int
				var from time.Time
				if dues != nil {
					var ok bool
					select {
					case k, ok = <-dues:
					case <-ctx.Done():
						return
					}
					if !ok {
						return
					}
					from = start.Add(time.Duration(k) * interval)
				} else {
					k = int(next.Add(1) - 1)
					if k >= n || ctx.Err() != nil {
						return
					}
					from = time.Now()
				}
				req = l.Request(req[:0], first+int64(k))
				code, body, err := c.RoundTrip(req)
				if err != nil {
					cancel(fmt.Errorf("request %d: %w", first+int64(k), err))
					return
				}
				lat[k] = time.Since(from)
				if !l.OK(code) {
					failed.Add(1)
					noteErr(fmt.Sprintf("status %d: %.200s", code, body))
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("cannot finish the load on %s: %w", l.Addr, err)
	}
	var ws []Window
	if interval > 0 {
		ws = windows(lat, start, interval) // before the sort: lat[k] is request k's
	}
	slices.Sort(lat)
	res := &Result{Requests: int64(n), Failed: failed.Load(), Elapsed: elapsed, Latencies: lat, Windows: ws}
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	return res, nil
}

// pace sends offsets 0..n-1 to dues, each at its due time start + k×interval, then closes
// dues. It wakes at most every millisecond and sends every offset due by then, so its own
// timer resolution does not cap the rate. dues holds n: pacing never waits for the workers,
// so requests the server is late for queue and their latency counts from their due time.
func pace(ctx context.Context, dues chan<- int, start time.Time, interval time.Duration, n int) {
	defer close(dues)
	t := time.NewTimer(0)
	defer t.Stop()
	k := 0
	for k < n {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		now := time.Since(start)
		for k < n && time.Duration(k)*interval <= now {
			dues <- k
			k++
		}
		if k < n {
			t.Reset(max(time.Duration(k)*interval-time.Since(start), time.Millisecond))
		}
	}
}
