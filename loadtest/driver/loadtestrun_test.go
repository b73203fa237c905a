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

// loadtestRoot skips t where scripts/loadtest.sh cannot run (-short; no bash, curl or go) and
// returns the repository's root.
func loadtestRoot(t *testing.T) string {
	t.Helper()
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
	return root
}

// runLoadtest runs scripts/loadtest.sh of root with args and a report in tmp (its TMPDIR),
// the environment plus env, and fails t unless it succeeds and writes a readable report. On
// ctx's end SIGTERM lets the script stop pushd and pushsim; SIGKILL would orphan them.
func runLoadtest(ctx context.Context, t *testing.T, root, tmp string, env []string, args ...string) (Report, []byte) {
	t.Helper()
	report := filepath.Join(tmp, "report.json")
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "scripts", "loadtest.sh")}, append(args, "--report", report)...)...)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp), env...)
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
	return r, out
}
