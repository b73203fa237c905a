package driver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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
	tmp := t.TempDir()
	report := filepath.Join(tmp, "report.json")
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "loadtest.sh"),
		"--installations", "2000", "--seed-import", "--latency-compare", "20ms", "--report", report)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "LOADTEST_SIM_INVALID_RATE=0", "TMPDIR="+tmp)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/loadtest.sh failed: %v\n%s", err, out)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, out)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
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
