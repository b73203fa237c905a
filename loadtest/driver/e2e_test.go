package driver

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDriverEndToEnd runs scripts/loadtest.sh with 500 installations: a real pushd process
// against the real simulators. It is skipped with -short and while cmd/pushd cannot run it.
func TestDriverEndToEnd(t *testing.T) {
	root := loadtestRoot(t)
	if _, err := os.Stat(filepath.Join(root, "cmd", "pushd")); err != nil {
		t.Skipf("cmd/pushd does not exist yet: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	pushd := filepath.Join(tmp, "pushd")
	build := exec.CommandContext(ctx, "go", "build", "-o", pushd, "./cmd/pushd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("cmd/pushd does not build yet: %v\n%s", err, out)
	}
	help, _ := exec.CommandContext(ctx, pushd, "serve", "--help").CombinedOutput()
	for _, f := range []string{"-apns-endpoint", "-fcm-endpoint", "-gateway-ca"} {
		if !bytes.Contains(help, []byte(f)) {
			t.Skipf("pushd serve has no %s flag yet (`pushd serve --help` does not list it)", f)
		}
	}

	r, out := runLoadtest(ctx, t, root, tmp, []string{"PUSHD_BIN=" + pushd},
		"--installations", "500", "--concurrency", "32", "--devices-per-type", "120")
	names := make([]string, 0, len(r.Scenarios))
	for _, s := range r.Scenarios {
		names = append(names, s.Name)
		if s.Verification != VerdictOK || (s.Sent == 0) != (s.Name == ScenarioQuota) {
			t.Errorf("scenario %s: %s, sent %d: %v", s.Name, s.Verification, s.Sent, s.Problems)
		}
	}
	if !r.OK || r.Installations != 500 || strings.Join(names, ",") != "channel,where,devices,invalid,invalid-again,direct,mixed,quota-fill,quota" {
		t.Fatalf("report: ok=%v, %d installations, scenarios %v\n%s", r.OK, r.Installations, names, out)
	}
	// The own channel: both protocols, some devices offline during the push, every one acked.
	for _, s := range r.Scenarios[len(r.Scenarios)-4 : len(r.Scenarios)-2] {
		if s.OwnDevices == 0 || s.OwnLC == 0 || s.OwnLC == s.OwnDevices || s.OwnOffline == 0 ||
			s.Arrivals != int64(s.OwnDevices) || s.LCSuccesses != int64(s.OwnDevices) {
			t.Errorf("scenario %s: %d own-channel devices (%d lc, %d offline), %d arrivals, %d lcSuccesses",
				s.Name, s.OwnDevices, s.OwnLC, s.OwnOffline, s.Arrivals, s.LCSuccesses)
		}
	}
	if mixed := r.Scenarios[len(r.Scenarios)-3]; len(mixed.ByChannel) != len(MixedChannels) {
		t.Errorf("mixed scenario reached channels %v, want %v", mixed.ByChannel, MixedChannels)
	}
	// The quota scenarios: exactly the vivo simulator's day quota sent, the rest deferred
	// until the quota day resets (issue 20 item 2), none failed or expired.
	fill, quota := r.Scenarios[len(r.Scenarios)-2], r.Scenarios[len(r.Scenarios)-1]
	if d := quota.ByChannel["vivo"].Deferred; fill.Sent != int64(r.QuotaFill) || d != int64(r.Quota) || quota.Failed != 0 || quota.Sent != 0 || quota.Expired != 0 || r.QuotaFill == 0 || r.Quota == 0 {
		t.Errorf("quota scenarios: fill sent %d of %d, quota deferred %d, failed %d, sent %d, expired %d of %d",
			fill.Sent, r.QuotaFill, d, quota.Failed, quota.Sent, quota.Expired, r.Quota)
	}
}
