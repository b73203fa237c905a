package driver

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/sender/fcm"
)

// TestDriverLatencyCompareEndToEnd runs scripts/loadtest.sh as make loadtest-latency does, with
// the bulk seed: a real pushd and pushsim, the all push at the simulators' latency and again
// with 20 ms added at run time, both verified per token and compared in the report. The ratio
// itself is a measurement (make loadtest-latency), not asserted here.
func TestDriverLatencyCompareEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end load test skipped with -short")
	}
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("end-to-end load test needs %s: %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, out := runLoadtest(ctx, t, root, t.TempDir(), []string{"LOADTEST_SIM_INVALID_RATE=0"},
		"--installations", "2000", "--seed-import", "--latency-compare", "20ms")
	if !r.OK || r.Upserts != 2000 || len(r.Scenarios) != 2 || r.Scenarios[0].Name != ScenarioAll || r.Scenarios[1].Name != "all@20ms" {
		t.Fatalf("report: ok %v, %d seeded, scenarios %+v\n%s", r.OK, r.Upserts, r.Scenarios, out)
	}
	for _, s := range r.Scenarios {
		if s.Sent != 2000 {
			t.Errorf("scenario %s sent %d, want 2000", s.Name, s.Sent)
		}
	}
	c := r.Latency
	if c == nil || c.Latency != "20ms" || c.ZeroPerSecond <= 0 || c.LatencyPerSecond <= 0 || c.Ratio <= 0 {
		t.Fatalf("latency comparison %+v, want both rates and their ratio", c)
	}
	// The floor: h2load against both gateways at both latencies, on pushd's default budgets
	// (apns.DefaultMaxConns APNs connections, fcm.DefaultMaxConns FCM ones), or each run
	// saying h2load is missing.
	if len(c.Floor) != 2 {
		t.Fatalf("latency floor %+v, want one per gateway the push reached\n%s", c.Floor, out)
	}
	measured := 0
	for _, f := range c.Floor {
		if want := map[string]int{floorAPNs: apns.DefaultMaxConns, floorFCM: fcm.DefaultMaxConns}[f.Gateway]; f.Connections != want || f.Streams != 100 {
			t.Errorf("latency floor %s on %d×%d, want %d×100", f.Gateway, f.Connections, f.Streams, want)
		}
		for _, fr := range []FloorRun{f.Zero, f.Latency} {
			switch {
			case fr.Skipped == "" && fr.OK >= 2000 && fr.RequestsPerSecond > 0:
				measured++
			case !strings.Contains(fr.Skipped, "nghttp2-client"):
				t.Errorf("latency floor %s neither measured nor said missing: %+v", f.Gateway, fr)
			}
		}
	}
	if measured == 4 && (c.FloorRatio <= 0 || c.VsFloor <= 0 || !strings.Contains(string(out), "latency floor: h2load on pushd's connections")) {
		t.Errorf("floor measured but no ratio reported: %+v\n%s", c, out)
	}
	// The latency run did wait: n requests on c×m streams take at least ⌈n/(c×m)⌉ round trips
	// of 20 ms.
	for _, f := range c.Floor {
		if fr := f.Latency; fr.Skipped == "" {
			streams := int64(f.Connections * f.Streams)
			if least := 0.020 * float64((fr.Requests+streams-1)/streams); fr.Seconds < least {
				t.Errorf("latency floor %s: %d requests in %.3fs on %d streams, less than %d round trips of 20 ms", f.Gateway, fr.Requests, fr.Seconds, streams, int(least/0.020))
			}
		}
	}
	t.Logf("latency floor: %.0f/s with no added latency, %.0f/s with 20 ms; pushd %.0f/s and %.0f/s", c.FloorZeroPerSecond, c.FloorLatencyPerSecond, c.ZeroPerSecond, c.LatencyPerSecond)
}
