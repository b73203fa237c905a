package intake

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// HandledJobs sums fan-out's three counters of handled jobs as pushd's ops endpoint writes them
// (VictoriaMetrics' Prometheus text, other series around them), and WaitHandled returns once
// the sum reaches its target; an endpoint without the counters, a failing one and a target
// never reached are errors.
func TestIntakeHandledJobs(t *testing.T) {
	set := metrics.NewSet()
	planned := set.NewCounter("pushd_fanout_jobs_planned_total")
	skipped := set.NewCounter("pushd_fanout_jobs_skipped_total")
	set.NewCounter("pushd_fanout_jobs_invalid_total").Add(2)
	set.NewCounter("pushd_fanout_jobs_planned_total_other").Add(1000) // a longer name: not counted
	set.NewCounter(`pushd_fanout_jobs_empty_total`).Add(500)
	set.NewGauge(`pushd_queue_lag{topic="jobs"}`, func() float64 { return 7 })
	planned.Add(40)
	skipped.Add(3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		set.WritePrometheus(w)
	}))
	defer srv.Close()
	ctx := context.Background()
	c := srv.Client()
	n, err := HandledJobs(ctx, c, srv.URL+"/")
	if err != nil || n != 45 {
		t.Fatalf("HandledJobs = %d, %v; want 45 (40 planned, 3 skipped, 2 invalid)", n, err)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 55 {
			planned.Inc()
		}
	}()
	at, err := WaitHandled(ctx, c, srv.URL, 100, time.Millisecond)
	if err != nil || at.IsZero() {
		t.Fatalf("WaitHandled(100) = %v, %v", at, err)
	}
	<-done
	if n, _ := HandledJobs(ctx, c, srv.URL); n != 100 {
		t.Errorf("after the wait HandledJobs = %d, want 100", n)
	}

	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := WaitHandled(short, c, srv.URL, 101, time.Millisecond); err == nil || !strings.Contains(err.Error(), "handled 100 of 101") {
		t.Errorf("WaitHandled for a job never planned = %v, want handled 100 of 101", err)
	}

	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("pushd_http_requests_total 3\n"))
	}))
	defer other.Close()
	if _, err := HandledJobs(ctx, other.Client(), other.URL); err == nil || !strings.Contains(err.Error(), "fan-out") {
		t.Errorf("metrics without fan-out's counters: %v, want an error naming fan-out", err)
	}
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer failing.Close()
	if _, err := WaitHandled(ctx, failing.Client(), failing.URL, 1, time.Millisecond); err == nil || !strings.Contains(err.Error(), "status 500") {
		t.Errorf("a failing metrics endpoint: %v, want status 500", err)
	}
}
