package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// The floor: after the scenarios, the driver sends the same kind of request pushd sent
// (POST /3/device/<token> with a JWT, topic and push type, an alert body of the same size)
// to the same APNs simulator with h2load (nghttp2, C) and with a minimal Go HTTP/2 client
// (loadtest/cmd/h2floor), each in its own process, and measures that process's CPU (its
// rusage) and rate. pushd's figures of the compared scenario are then given as ratios to
// them: how many times the floor's CPU per request pushd spends per delivery.

// FloorRun is one floor tool's run.
type FloorRun struct {
	Tool                string  `json:"tool"` // h2load or go-http2
	Requests            int64   `json:"requests,omitempty"`
	OK                  int64   `json:"ok,omitempty"` // answered 200
	Seconds             float64 `json:"seconds,omitempty"`
	CPUSeconds          float64 `json:"cpuSeconds,omitempty"` // the tool's user+system CPU
	RequestsPerSecond   float64 `json:"requestsPerSecond,omitempty"`
	CPUMicrosPerRequest float64 `json:"cpuMicrosPerRequest,omitempty"`
	// CPURatio is pushd's CPU µs per delivery over this floor's per request; RateRatio is
	// pushd's deliveries/s over this floor's requests/s.
	CPURatio  float64 `json:"cpuRatio,omitempty"`
	RateRatio float64 `json:"rateRatio,omitempty"`
	Skipped   string  `json:"skipped,omitempty"` // why the tool did not run or its figures are missing
}

// Floor is the floor measured in this run and what it is compared with.
type Floor struct {
	Scenario                  string     `json:"scenario"` // whose pushd figures the ratios use
	StartT                    float64    `json:"startT"`   // seconds since the run started
	PushdCPUMicrosPerDelivery float64    `json:"pushdCpuMicrosPerDelivery"`
	PushdDeliveriesPerSecond  float64    `json:"pushdDeliveriesPerSecond"`
	Connections               int        `json:"connections"`
	Streams                   int        `json:"streams"` // in flight per connection
	Runs                      []FloorRun `json:"runs"`
}

// Ratio is pushd's figure over the floor's, 0 when either is unknown.
func Ratio(pushd, floor float64) float64 {
	if pushd <= 0 || floor <= 0 {
		return 0
	}
	return pushd / floor
}

// setRatios fills each run's ratios from f's pushd figures.
func (f *Floor) setRatios() {
	for i := range f.Runs {
		r := &f.Runs[i]
		r.CPURatio = Ratio(f.PushdCPUMicrosPerDelivery, r.CPUMicrosPerRequest)
		r.RateRatio = Ratio(f.PushdDeliveriesPerSecond, r.RequestsPerSecond)
	}
}

// compared picks the scenario the floor is compared with: the main app's scenario with the
// most deliveries whose pushd CPU was measured (the kill scenario's spans two processes).
func compared(scs []ScenarioReport) *ScenarioReport {
	var best *ScenarioReport
	for i := range scs {
		s := &scs[i]
		if IsHybrid(s.Name) || s.CPUMicrosPerDelivery <= 0 {
			continue
		}
		if best == nil || s.Sent > best.Sent {
			best = s
		}
	}
	return best
}

// floorBody is an alert of the size pushd renders for the scenarios' data.
const floorBody = `{"aps":{"alert":{"title":"loadtest","body":"pushd load test: channel"}}}`

// runFloor measures the floor against the APNs simulator and sets r.rep.Floor.
func (r *run) runFloor(ctx context.Context, files simFiles) error {
	sc := compared(r.rep.Scenarios)
	if sc == nil {
		r.logf("floor: skipped: no scenario of the main app with pushd's CPU measured")
		return nil
	}
	apnsURL := ""
	for _, s := range r.cfg.Sims {
		if s.Name == push.ChannelAPNs {
			apnsURL = s.URL
		}
	}
	if apnsURL == "" {
		r.logf("floor: skipped: no simulator named apns in -sim-stats")
		return nil
	}
	var tokens []string
	for i := range r.pop.Main {
		if d := &r.pop.Main[i]; d.IOS && !d.Dead {
			tokens = append(tokens, d.Token)
		}
	}
	if len(tokens) == 0 {
		r.logf("floor: skipped: the population has no iOS token")
		return nil
	}
	n := floorRequests(r.cfg.FloorRequests, sc.ByChannel[push.ChannelAPNs].Sent)
	key, err := sim.ParseAPNsKey(files.p8)
	if err != nil {
		return fmt.Errorf("cannot read the APNs key for the floor: %w", err)
	}
	jwt, err := sim.NewAPNsToken(key, files.keyID, r.cfg.APNsTeamID, time.Now())
	if err != nil {
		return fmt.Errorf("cannot sign the floor's APNs token: %w", err)
	}
	dir, err := os.MkdirTemp("", "pushd-floor-")
	if err != nil {
		return fmt.Errorf("cannot make the floor's temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	var uris, toks strings.Builder
	for i := range min(n, len(tokens)) {
		fmt.Fprintf(&uris, "%s/3/device/%s\n", apnsURL, tokens[i])
		fmt.Fprintf(&toks, "%s\n", tokens[i])
	}
	files2 := map[string]string{"uris.txt": uris.String(), "tokens.txt": toks.String(), "body.json": floorBody, "ca.pem": string(files.ca)}
	for name, content := range files2 {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return fmt.Errorf("cannot write the floor's %s: %w", name, err)
		}
	}
	hdrs := []string{"authorization: bearer " + jwt, "apns-topic: " + r.cfg.Topic, "apns-push-type: alert", "apns-priority: 10", "content-type: application/json"}
	f := &Floor{Scenario: sc.Name, PushdCPUMicrosPerDelivery: sc.CPUMicrosPerDelivery, PushdDeliveriesPerSecond: sc.DeliveriesPerSecond,
		Connections: r.cfg.FloorConnections, Streams: r.cfg.FloorStreams}
	c, m := strconv.Itoa(f.Connections), strconv.Itoa(f.Streams)
	f.StartT = time.Since(r.rep.StartedAt).Seconds()

	h2 := FloorRun{Tool: "h2load"}
	if r.cfg.FloorH2load == "" {
		h2.Skipped = "h2load not available (Debian package nghttp2-client; scripts/loadtest.sh installs it when run as root)"
	} else {
		args := []string{"-n", strconv.Itoa(n), "-c", c, "-m", m, "-t", "1", "-i", filepath.Join(dir, "uris.txt"), "-d", filepath.Join(dir, "body.json")}
		for _, h := range hdrs {
			args = append(args, "-H", h)
		}
		out, cpu, secs, err := runTool(ctx, r.cfg.FloorH2load, args)
		h2.Requests, h2.CPUSeconds = int64(n), cpu
		if err == nil {
			h2.OK, h2.Seconds, err = ParseH2load(out)
		}
		if err != nil {
			h2.Skipped = err.Error()
			h2.Seconds = secs
		}
	}
	f.Runs = append(f.Runs, h2)

	g := FloorRun{Tool: "go-http2"}
	if r.cfg.FloorGo == "" {
		g.Skipped = "no -floor-go binary (loadtest/cmd/h2floor)"
	} else {
		args := []string{"-url", apnsURL, "-tokens", filepath.Join(dir, "tokens.txt"), "-n", strconv.Itoa(n), "-c", c, "-m", m,
			"-body", filepath.Join(dir, "body.json"), "-ca", filepath.Join(dir, "ca.pem")}
		for _, h := range hdrs {
			args = append(args, "-header", h)
		}
		out, cpu, _, err := runTool(ctx, r.cfg.FloorGo, args)
		g.Requests, g.CPUSeconds = int64(n), cpu
		if err == nil {
			var res struct {
				OK      int64   `json:"ok"`
				Seconds float64 `json:"seconds"`
				Error   string  `json:"error"`
			}
			if err = json.Unmarshal(bytes.TrimSpace(out), &res); err == nil {
				g.OK, g.Seconds = res.OK, res.Seconds
				if res.Error != "" {
					err = errors.New(res.Error)
				}
			}
		}
		if err != nil {
			g.Skipped = err.Error()
		}
	}
	f.Runs = append(f.Runs, g)
	for i := range f.Runs {
		fr := &f.Runs[i]
		if fr.OK > 0 && fr.Seconds > 0 {
			fr.RequestsPerSecond = float64(fr.OK) / fr.Seconds
			fr.CPUMicrosPerRequest = fr.CPUSeconds * 1e6 / float64(fr.OK)
		}
		if fr.Skipped == "" && fr.OK < fr.Requests*9/10 {
			fr.Skipped = fmt.Sprintf("only %d of %d requests answered 200", fr.OK, fr.Requests)
		}
	}
	f.setRatios()
	r.rep.Floor = f
	for _, fr := range f.Runs {
		if fr.CPUMicrosPerRequest > 0 {
			r.logf("floor %s: %d requests in %.2fs (%.0f/s), %.1f µs CPU per request", fr.Tool, fr.OK, fr.Seconds, fr.RequestsPerSecond, fr.CPUMicrosPerRequest)
		}
		if fr.Skipped != "" {
			r.logf("floor %s: %s", fr.Tool, fr.Skipped)
		}
	}
	return nil
}

// runTool runs a floor tool and returns its stdout, its CPU seconds and its wall seconds.
func runTool(ctx context.Context, bin string, args []string) ([]byte, float64, float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	var cpu float64
	if cmd.ProcessState != nil {
		cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	if err != nil {
		return stdout.Bytes(), cpu, secs, fmt.Errorf("cannot run %s: %w: %s", filepath.Base(bin), err, lastLine(stderr.Bytes()))
	}
	return stdout.Bytes(), cpu, secs, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

var (
	h2loadFinished = regexp.MustCompile(`(?m)^finished in ([0-9.]+)(us|ms|s),`)
	h2loadStatus   = regexp.MustCompile(`(?m)^status codes: ([0-9]+) 2xx,`)
)

// ParseH2load reads the 2xx answers and the duration from h2load's summary.
func ParseH2load(out []byte) (ok int64, seconds float64, err error) {
	fm := h2loadFinished.FindSubmatch(out)
	sm := h2loadStatus.FindSubmatch(out)
	if fm == nil || sm == nil {
		return 0, 0, fmt.Errorf("cannot read h2load's summary: no %q or %q line in %q", "finished in", "status codes", lastLine(out))
	}
	if seconds, err = strconv.ParseFloat(string(fm[1]), 64); err != nil {
		return 0, 0, fmt.Errorf("cannot read h2load's duration %q", fm[1])
	}
	switch string(fm[2]) {
	case "ms":
		seconds /= 1e3
	case "us":
		seconds /= 1e6
	}
	if ok, err = strconv.ParseInt(string(sm[1]), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("cannot read h2load's 2xx count %q", sm[1])
	}
	return ok, seconds, nil
}

// floorMaxDefault bounds the floor's requests when -floor-requests is not set. The floor is a
// figure per request, which 200,000 settle; sending as many as a 10,000,000-device push
// delivered built a 1 GB URI list in the driver and kept h2load busy for minutes.
const floorMaxDefault = 200_000

// floorRequests is how many requests each floor tool sends: flag when set, else the compared
// scenario's APNs deliveries (sent), within [2000, floorMaxDefault].
func floorRequests(flag int, sent int64) int {
	if flag > 0 {
		return flag
	}
	return int(min(max(sent, 2000), floorMaxDefault))
}
