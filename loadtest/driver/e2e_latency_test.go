package driver

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
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
	if c := r.Latency; c == nil || c.Latency != "20ms" || c.ZeroPerSecond <= 0 || c.LatencyPerSecond <= 0 || c.Ratio <= 0 {
		t.Errorf("latency comparison %+v, want both rates and their ratio", c)
	}
}
