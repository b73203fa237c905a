package driver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDriverEndToEndMeasures runs scripts/loadtest.sh on a small population and checks the
// measurement: pushd's process sampled (CPU, RSS) per scenario, the delivery times, the floor
// (the Go client always; h2load when installed or installable) with ratios, and the HTML
// report. Skipped with -short.
func TestDriverEndToEndMeasures(t *testing.T) {
	root := loadtestRoot(t)
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: pushd cannot be sampled")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	html := filepath.Join(tmp, "report.html")
	// 5,000 installations: /proc counts CPU in 10 ms ticks, and a push to a few hundred
	// costs pushd less than one.
	r, out := runLoadtest(ctx, t, root, tmp, []string{"LOADTEST_SIM_INVALID_RATE=0"},
		"--installations", "5000", "--concurrency", "32", "--pushes", "channel,all", "--html", html)
	if !r.OK || len(r.Scenarios) != 2 {
		t.Fatalf("report not OK or not 2 scenarios:\n%s", out)
	}
	if r.Settle == nil || r.Settle.Skipped != "" {
		t.Errorf("no wait for pushd to settle after the seed: %+v", r.Settle)
	}
	p := r.Pushd
	if p == nil || p.Error != "" || p.Samples < 2 || p.CPUSeconds <= 0 || p.RSSStart <= 0 || p.PeakRSS < p.RSSEnd {
		t.Fatalf("pushd's process: %+v", p)
	}
	// The build measured is named (the script builds pushd with the toolchain's defaults).
	if !strings.HasPrefix(p.Build, "go1.") || !strings.Contains(p.Build, "CGO_ENABLED=") || !bytes.Contains(out, []byte("pushd build: "+p.Build)) {
		t.Errorf("pushd's build %q, not named in the report:\n%s", p.Build, out)
	}
	for _, s := range r.Scenarios {
		// pushd read the answers and wrote the requests: both kinds of system call counted.
		if s.Reads <= 0 || s.Writes <= 0 || s.ReadsPerDelivery <= 0 || s.WritesPerDelivery <= 0 {
			t.Errorf("scenario %s: %d reads and %d writes (%.2f and %.2f per delivery), want both counted", s.Name, s.Reads, s.Writes, s.ReadsPerDelivery, s.WritesPerDelivery)
		}
		if s.CPUSeconds <= 0 || s.CPUMicrosPerDelivery <= 0 || s.RSSStart <= 0 || s.RSSPeak < s.RSSEnd ||
			s.LastDeliverySeconds <= 0 || s.LastDeliverySeconds < s.FirstDeliverySeconds {
			t.Errorf("scenario %s: cpu %.3fs (%.1f µs/delivery), rss %d→%d peak %d, first %.2fs last %.2fs",
				s.Name, s.CPUSeconds, s.CPUMicrosPerDelivery, s.RSSStart, s.RSSEnd, s.RSSPeak, s.FirstDeliverySeconds, s.LastDeliverySeconds)
		}
	}
	f := r.Floor
	// The push reached both gateways: h2load against each (when installed), the Go floor
	// against APNs, and h2load's mix of the two when both were measured.
	if f == nil || f.Scenario != ScenarioAll || f.FCMShare <= 0.3 || f.FCMShare >= 0.7 || len(f.Runs) < 3 {
		t.Fatalf("floor: %+v\n%s", f, out)
	}
	seen := map[string]bool{}
	h2loadMeasured := 0
	for _, fr := range f.Runs {
		seen[fr.Name()] = true
		measured := fr.CPUMicrosPerRequest > 0 && fr.CPURatio > 0 && fr.RateRatio > 0 && (fr.OK >= 2000 || fr.Tool == floorMixed)
		switch {
		case fr.Tool == "go-http2" && !measured:
			t.Errorf("Go floor not measured: %+v", fr)
		case fr.Tool == "h2load" && !measured && !strings.Contains(fr.Skipped, "nghttp2-client"):
			t.Errorf("h2load neither measured nor said missing: %+v", fr)
		case fr.Tool == floorMixed && !measured:
			t.Errorf("h2load mix not derived: %+v", fr)
		}
		if fr.Tool == "h2load" && measured {
			h2loadMeasured++
		}
	}
	for _, want := range []string{"h2load apns", "go-http2 apns", "h2load fcm"} {
		if !seen[want] {
			t.Errorf("floor has no %s run: %+v", want, f.Runs)
		}
	}
	if h2loadMeasured == 2 && !seen[floorMixed] {
		t.Errorf("both h2load runs measured but no mix: %+v", f.Runs)
	}
	if !bytes.Contains(out, []byte("pushd CPU/delivery =")) {
		t.Errorf("the table gives no ratio to the floor:\n%s", out)
	}
	h, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(h, []byte("<svg")); n < 8 {
		t.Errorf("HTML report has %d plots", n)
	}
}
