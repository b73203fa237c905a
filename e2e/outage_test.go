package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
)

// A 60 s gateway outage in the middle of a push loses nothing (issue 12, item 5): the
// simulator answers 503, then drops connections, then sends GOAWAYs, then answers 429 with
// Retry-After, 15 s each; pushd parks its deliveries behind one probe at a time, is stopped with
// SIGTERM and restarted during the outage, and once the gateway answers again every target is
// accepted exactly once (up to a batch per task sent again after the stop) and the record is done
// with exact counts and no failure. The outage itself is 60 s of wall time: both processes run on
// their own clocks.
func TestE2EGatewayOutageLosesNothing(t *testing.T) {
	t.Parallel()
	const (
		n           = 2000
		simRate     = 400 // accepted pushes/s: the push takes ~5 s without the outage
		batchSize   = 100 // --fanout-batch-size
		concurrency = 2   // --fanout-concurrency
		sendAhead   = 2   // --fanout-send-ahead: batches per task at the gateway at once
		phase       = 15 * time.Second
	)
	begin := time.Now()
	s := startPushsim(t, "-latency", "2ms", "-rate", strconv.Itoa(simRate))
	data := t.TempDir()
	c, tokens := prepareData(t, data, s, push.DefaultSettings(), n, "outage")
	args := []string{
		"--roles", "api,fanout,scheduler",
		"--apns-endpoint", s.apnsURL,
		"--gateway-ca", filepath.Join(s.dir, "ca.pem"),
		"--fanout-batch-size", strconv.Itoa(batchSize),
		"--fanout-concurrency", strconv.Itoa(concurrency),
		"--fanout-send-ahead", strconv.Itoa(sendAhead),
		"--fanout-buckets-per-task", "64", // 4 tasks
		// Probes at most 2 s apart: the push resumes within 2 s of the outage's end.
		"--sender-max-backoff", "2s",
	}
	p := startPushd(t, data, args...)
	c.base = p.base
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "e2e outage"}, "channels": []string{"outage"}})

	waitfor.True(t, pushTimeout, "the simulator to accept a quarter of the push", func() bool {
		return s.stats.mustGet(t, false).Accepted >= n/4
	})
	s.stats.startOutage(t, fmt.Sprintf(`[{"mode":"status","status":503,"for":%[1]q},{"mode":"drop","for":%[1]q},`+
		`{"mode":"goaway","for":%[1]q},{"mode":"status","status":429,"retry_after":"5s","for":%[1]q}]`, phase.String()))
	outageAt := time.Now()
	before := s.stats.mustGet(t, false).Accepted
	if before >= n {
		t.Fatalf("the push was over (%d accepted) before the outage: slow the simulator down", before)
	}

	// pushd parks its deliveries instead of failing them...
	waitfor.True(t, 2*phase, "pushd to park deliveries", func() bool { return metric(t, p.base, `pushd_sender_parked{channel="apns"}`) > 0 })
	// ...and a SIGTERM in the outage stops it in bounded time; it resumes after a restart.
	stopAt := time.Now()
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM during the outage: %v (want status 0)", err)
	}
	t.Logf("SIGTERM %s into the outage: pushd exited in %s", stopAt.Sub(outageAt).Round(time.Millisecond), time.Since(stopAt).Round(time.Millisecond))
	p = startPushd(t, data, args...)
	c.base = p.base
	waitfor.True(t, 2*phase, "the restarted pushd to park deliveries", func() bool {
		return metric(t, p.base, `pushd_sender_parked{channel="apns"}`) > 0
	})
	if !s.stats.mustGet(t, false).InOutage {
		t.Fatalf("the outage ended before pushd was restarted (%s): the test lost its point", time.Since(outageAt))
	}

	waitfor.True(t, 4*phase+pushTimeout, "the outage to end", func() bool { return !s.stats.mustGet(t, false).InOutage })
	ended := time.Now()
	rec := c.waitDone(t, oid)
	st := s.stats.mustGet(t, true)
	short, dups, strangers := deliveries(st.PerToken, tokens, 1)
	t.Logf("outage of %s: %d requests met it (by status %v), %d accepted before it; done %s after it ended, %s in all; %d duplicates",
		ended.Sub(outageAt).Round(time.Millisecond), st.Outage, st.ByStatus, before,
		time.Since(ended).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond), dups)
	if len(short) > 0 {
		t.Errorf("%d of %d tokens never reached the simulator (first %s)", len(short), n, short[0])
	}
	if len(strangers) > 0 {
		t.Errorf("%d tokens that are not targets reached the simulator", len(strangers))
	}
	if bound := int64(batchSize * sendAhead * concurrency); dups > bound {
		t.Errorf("%d duplicates: more than the batches in flight at the SIGTERM (%d)", dups, bound)
	}
	if rec.Devices != n || rec.Successes != n || rec.Failures != 0 || rec.Expired != 0 || rec.InvalidTokens != 0 || len(rec.Errors) != 0 {
		t.Errorf("record not exact: %+v, want devices = successes = %d, no failure", rec, n)
	}
	// Not spinning: the deliveries in flight when the outage began (and again after the
	// restart), then one probe at a time; thousands would mean every delivery retried alone.
	if limit := int64(2*batchSize*sendAhead*concurrency + 200); st.Outage > limit {
		t.Errorf("%d requests during the outage, want at most %d", st.Outage, limit)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}

// startOutage starts the simulator outage described by phases (POST /_outage).
func (s *simClient) startOutage(t *testing.T, phases string) {
	t.Helper()
	res, err := s.c.Post(s.url+"/_outage", "application/json", strings.NewReader(phases))
	if err != nil {
		t.Fatalf("cannot start the simulator outage: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("simulator outage: status %d %s", res.StatusCode, b)
	}
}

// metric reads one series of pushd's /metrics (0 when absent).
func metric(t *testing.T, base, series string) float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("cannot read pushd metrics: %v", err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", series, err)
			}
			return f
		}
	}
	return 0
}
