package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// The floor: after the scenarios, the driver sends the same kind of request pushd sent to
// the same simulators, each tool in its own process, and measures that process's CPU (its
// rusage) and rate. To APNs (POST /3/device/<token> with a JWT, topic and push type, an alert
// body of the same size): h2load (nghttp2, C) and a minimal Go HTTP/2 client
// (loadtest/cmd/h2floor). To FCM (POST /v1/projects/<id>/messages:send with an OAuth2 access
// token from the simulator's token endpoint, a message of the same size): h2load. pushd's
// figures of the compared scenario are then given as ratios to them: how many times the
// floor's CPU per request pushd spends per delivery; for a scenario that reached both, also to
// h2load's mix of the two in the scenario's proportions.

// Floor gateways and the derived mix's tool name.
const (
	floorAPNs  = "apns"
	floorFCM   = "fcm"
	floorMixed = "h2load mix"
)

// FloorRun is one floor tool's run against one simulator.
type FloorRun struct {
	Tool                string  `json:"tool"`    // h2load, go-http2, or "h2load mix" (derived)
	Gateway             string  `json:"gateway"` // apns or fcm; "apns+fcm" for the mix
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

// Name is the run's label in the reports: tool and gateway.
func (fr FloorRun) Name() string {
	if fr.Tool == floorMixed {
		return fr.Tool
	}
	return fr.Tool + " " + fr.Gateway
}

// Floor is the floor measured in this run and what it is compared with.
type Floor struct {
	Scenario                  string  `json:"scenario"` // whose pushd figures the ratios use
	StartT                    float64 `json:"startT"`   // seconds since the run started
	PushdCPUMicrosPerDelivery float64 `json:"pushdCpuMicrosPerDelivery"`
	PushdDeliveriesPerSecond  float64 `json:"pushdDeliveriesPerSecond"`
	// FCMShare is the share of the scenario's APNs and FCM deliveries that went to FCM: 0 for
	// an iOS-only push, 1 for an Android-only one.
	FCMShare    float64    `json:"fcmShare"`
	Connections int        `json:"connections"`
	Streams     int        `json:"streams"` // in flight per connection
	Runs        []FloorRun `json:"runs"`
}

// Ratio is pushd's figure over the floor's, 0 when either is unknown.
func Ratio(pushd, floor float64) float64 {
	if pushd <= 0 || floor <= 0 {
		return 0
	}
	return pushd / floor
}

// setFigures derives each run's rate and CPU per request from its counts, adds h2load's mix
// when the scenario reached both gateways and both were measured, and sets the ratios.
func (f *Floor) setFigures() {
	f.Runs = slices.DeleteFunc(f.Runs, func(fr FloorRun) bool { return fr.Tool == floorMixed })
	for i := range f.Runs {
		f.Runs[i].setFigures()
	}
	if m, ok := f.mix(); ok {
		f.Runs = append(f.Runs, m)
	}
	f.setRatios()
}

// setFigures derives the run's rate and CPU per request from its counts; a run with fewer than
// nine in ten requests answered 200 is skipped.
func (fr *FloorRun) setFigures() {
	if fr.OK > 0 && fr.Seconds > 0 {
		fr.RequestsPerSecond = float64(fr.OK) / fr.Seconds
		fr.CPUMicrosPerRequest = fr.CPUSeconds * 1e6 / float64(fr.OK)
	}
	if fr.Skipped == "" && fr.OK < fr.Requests*9/10 {
		fr.Skipped = fmt.Sprintf("only %d of %d requests answered 200", fr.OK, fr.Requests)
	}
}

// mix is h2load's floor for the scenario's proportions of APNs and FCM deliveries: the CPU
// per request and the time per request of the two runs, weighted by FCMShare.
func (f *Floor) mix() (FloorRun, bool) {
	if f.FCMShare <= 0 || f.FCMShare >= 1 {
		return FloorRun{}, false
	}
	var a, g *FloorRun
	for i := range f.Runs {
		switch fr := &f.Runs[i]; {
		case fr.Tool != "h2load" || fr.Skipped != "" || fr.CPUMicrosPerRequest <= 0 || fr.RequestsPerSecond <= 0:
		case fr.Gateway == floorAPNs:
			a = fr
		case fr.Gateway == floorFCM:
			g = fr
		}
	}
	if a == nil || g == nil {
		return FloorRun{}, false
	}
	s := f.FCMShare
	return FloorRun{Tool: floorMixed, Gateway: floorAPNs + "+" + floorFCM,
		CPUMicrosPerRequest: (1-s)*a.CPUMicrosPerRequest + s*g.CPUMicrosPerRequest,
		RequestsPerSecond:   1 / ((1-s)/a.RequestsPerSecond + s/g.RequestsPerSecond)}, true
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

// floorBody is an alert of the size pushd renders for the scenarios' data; fcmFloorBody the
// FCM message of the same alert, for one registration token.
const (
	floorBody    = `{"aps":{"alert":{"title":"loadtest","body":"pushd load test: channel"}}}`
	fcmFloorBody = `{"message":{"token":%q,"notification":{"title":"loadtest","body":"pushd load test: channel"}}}`
)

// runFloor measures the floor against the APNs and FCM simulators the compared scenario
// reached and sets r.rep.Floor.
func (r *run) runFloor(ctx context.Context, files simFiles) error {
	sc := compared(r.rep.Scenarios)
	if sc == nil {
		r.logf("floor: skipped: no scenario of the main app with pushd's CPU measured")
		return nil
	}
	f := &Floor{Scenario: sc.Name, PushdCPUMicrosPerDelivery: sc.CPUMicrosPerDelivery, PushdDeliveriesPerSecond: sc.DeliveriesPerSecond,
		Connections: r.cfg.FloorConnections, Streams: r.cfg.FloorStreams}
	apnsSent, fcmSent := sc.ByChannel[push.ChannelAPNs].Sent, sc.ByChannel[push.ChannelFCM].Sent
	if apnsSent+fcmSent > 0 {
		f.FCMShare = float64(fcmSent) / float64(apnsSent+fcmSent)
	}
	f.StartT = time.Since(r.rep.StartedAt).Seconds()
	dir, err := os.MkdirTemp("", "pushd-floor-")
	if err != nil {
		return fmt.Errorf("cannot make the floor's temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), files.ca, 0o600); err != nil {
		return fmt.Errorf("cannot write the floor's ca.pem: %w", err)
	}
	if fcmSent == 0 || apnsSent > 0 {
		if err := r.apnsFloor(ctx, f, files, dir, floorRequests(r.cfg.FloorRequests, apnsSent)); err != nil {
			return err
		}
	}
	if fcmSent > 0 {
		if err := r.fcmFloor(ctx, f, files, dir, floorRequests(r.cfg.FloorRequests, fcmSent)); err != nil {
			return err
		}
	}
	if len(f.Runs) == 0 {
		return nil
	}
	f.setFigures()
	r.rep.Floor = f
	for _, fr := range f.Runs {
		if fr.Tool == floorMixed {
			r.logf("floor %s: %.1f µs CPU per request at %.0f%% FCM", fr.Name(), fr.CPUMicrosPerRequest, 100*f.FCMShare)
			continue
		}
		if fr.CPUMicrosPerRequest > 0 {
			r.logf("floor %s: %d requests in %.2fs (%.0f/s), %.1f µs CPU per request", fr.Name(), fr.OK, fr.Seconds, fr.RequestsPerSecond, fr.CPUMicrosPerRequest)
		}
		if fr.Skipped != "" {
			r.logf("floor %s: %s", fr.Name(), fr.Skipped)
		}
	}
	return nil
}

// simURL is the URL of the simulator named name in -sim-stats ("" if none).
func (r *run) simURL(name string) string {
	for _, s := range r.cfg.Sims {
		if s.Name == name {
			return s.URL
		}
	}
	return ""
}

// apnsFloor runs h2load and the Go floor against the APNs simulator, n requests each, and adds
// their runs to f.
func (r *run) apnsFloor(ctx context.Context, f *Floor, files simFiles, dir string, n int) error {
	req, err := r.apnsRequest(files, dir, n)
	if err != nil || req == nil {
		return err
	}
	f.Runs = append(f.Runs, r.h2loadRun(ctx, floorAPNs, n, f.Connections, req))

	g := FloorRun{Tool: "go-http2", Gateway: floorAPNs}
	if r.cfg.FloorGo == "" {
		g.Skipped = "no -floor-go binary (loadtest/cmd/h2floor)"
	} else {
		args := []string{"-url", req.url, "-tokens", filepath.Join(dir, "tokens.txt"), "-n", strconv.Itoa(n),
			"-c", strconv.Itoa(f.Connections), "-m", strconv.Itoa(f.Streams),
			"-body", filepath.Join(dir, "body.json"), "-ca", filepath.Join(dir, "ca.pem")}
		for _, h := range req.headers {
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
	return nil
}

// floorRequest is what a floor tool sends to one simulator: its URL, h2load's request
// arguments (-i uris or -d body and URI) and the headers.
type floorRequest struct {
	url     string
	args    []string
	headers []string
}

// apnsRequest writes the APNs floor's files into dir (uris.txt and tokens.txt for n of the
// population's live iOS tokens, body.json) and returns its request; nil, logged, when there is
// no APNs simulator or no iOS token.
func (r *run) apnsRequest(files simFiles, dir string, n int) (*floorRequest, error) {
	apnsURL := r.simURL(push.ChannelAPNs)
	if apnsURL == "" {
		r.logf("floor apns: skipped: no simulator named apns in -sim-stats")
		return nil, nil
	}
	var tokens []string
	for i := range r.pop.Main {
		if d := &r.pop.Main[i]; d.IOS && !d.Dead {
			tokens = append(tokens, d.Token)
		}
	}
	if len(tokens) == 0 {
		r.logf("floor apns: skipped: the population has no iOS token")
		return nil, nil
	}
	key, err := sim.ParseAPNsKey(files.p8)
	if err != nil {
		return nil, fmt.Errorf("cannot read the APNs key for the floor: %w", err)
	}
	jwt, err := sim.NewAPNsToken(key, files.keyID, r.cfg.APNsTeamID, time.Now())
	if err != nil {
		return nil, fmt.Errorf("cannot sign the floor's APNs token: %w", err)
	}
	var uris, toks strings.Builder
	for i := range min(n, len(tokens)) {
		fmt.Fprintf(&uris, "%s/3/device/%s\n", apnsURL, tokens[i])
		fmt.Fprintf(&toks, "%s\n", tokens[i])
	}
	written := map[string]string{"uris.txt": uris.String(), "tokens.txt": toks.String(), "body.json": floorBody}
	for name, content := range written {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return nil, fmt.Errorf("cannot write the floor's %s: %w", name, err)
		}
	}
	return &floorRequest{url: apnsURL, args: []string{"-i", filepath.Join(dir, "uris.txt"), "-d", filepath.Join(dir, "body.json")},
		headers: []string{"authorization: bearer " + jwt, "apns-topic: " + r.cfg.Topic, "apns-push-type: alert", "apns-priority: 10", "content-type: application/json"}}, nil
}

// fcmFloor runs h2load against the FCM simulator, n requests, and adds its run to f.
func (r *run) fcmFloor(ctx context.Context, f *Floor, files simFiles, dir string, n int) error {
	req, err := r.fcmRequest(ctx, files, dir)
	if err != nil || req == nil {
		return err
	}
	f.Runs = append(f.Runs, r.h2loadRun(ctx, floorFCM, n, f.Connections, req))
	return nil
}

// fcmRequest writes the FCM floor's message into dir and returns its request, with an access
// token the simulator's token endpoint grants for the main app's service account; nil, logged,
// when there is no FCM simulator or no live registration token. Every request carries the same
// registration token (h2load sends one body).
func (r *run) fcmRequest(ctx context.Context, files simFiles, dir string) (*floorRequest, error) {
	fcmURL := r.simURL(push.ChannelFCM)
	if fcmURL == "" {
		r.logf("floor fcm: skipped: no simulator named fcm in -sim-stats")
		return nil, nil
	}
	token := ""
	for i := range r.pop.Main {
		if d := &r.pop.Main[i]; !d.IOS && !d.Dead {
			token = d.Token
			break
		}
	}
	if token == "" {
		r.logf("floor fcm: skipped: the population has no live FCM registration token")
		return nil, nil
	}
	var sa sim.ServiceAccount
	if err := json.Unmarshal(files.sa, &sa); err != nil || sa.ProjectID == "" || sa.TokenURI == "" {
		return nil, fmt.Errorf("cannot read the project and token_uri of the floor's service account: %v", err)
	}
	access, err := r.fcmAccessToken(ctx, files.sa, sa.TokenURI)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "fcm-body.json"), fmt.Appendf(nil, fcmFloorBody, token), 0o600); err != nil {
		return nil, fmt.Errorf("cannot write the floor's fcm-body.json: %w", err)
	}
	uri := fcmURL + "/v1/projects/" + sa.ProjectID + "/messages:send"
	return &floorRequest{url: uri, args: []string{"-d", filepath.Join(dir, "fcm-body.json"), uri},
		headers: []string{"authorization: Bearer " + access, "content-type: application/json"}}, nil
}

// fcmAccessToken is the access token the FCM simulator's token endpoint (tokenURI, the service
// account's token_uri) grants for the service account saJSON, by the jwt-bearer grant pushd
// uses.
func (r *run) fcmAccessToken(ctx context.Context, saJSON []byte, tokenURI string) (string, error) {
	assertion, err := sim.NewFCMAssertion(saJSON, time.Now())
	if err != nil {
		return "", fmt.Errorf("cannot sign the floor's FCM assertion: %w", err)
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURI, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("cannot ask for the floor's FCM access token: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := r.sims.Do(req)
	if err != nil {
		return "", fmt.Errorf("cannot get the floor's FCM access token: %w", err)
	}
	defer res.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || res.StatusCode != http.StatusOK || tok.AccessToken == "" {
		return "", fmt.Errorf("cannot get the floor's FCM access token: %s (%v)", res.Status, err)
	}
	return tok.AccessToken, nil
}

// h2loadRun runs h2load with n requests of req on conns connections, each with the floor's
// streams in flight, as the floor run of gateway.
func (r *run) h2loadRun(ctx context.Context, gateway string, n, conns int, req *floorRequest) FloorRun {
	h2 := FloorRun{Tool: "h2load", Gateway: gateway}
	if r.cfg.FloorH2load == "" {
		h2.Skipped = "h2load not available (Debian package nghttp2-client; scripts/loadtest.sh installs it when run as root)"
		return h2
	}
	args := []string{"-n", strconv.Itoa(n), "-c", strconv.Itoa(conns), "-m", strconv.Itoa(r.cfg.FloorStreams), "-t", "1"}
	for _, h := range req.headers {
		args = append(args, "-H", h)
	}
	args = append(args, req.args...)
	out, cpu, secs, err := runTool(ctx, r.cfg.FloorH2load, args)
	h2.Requests, h2.CPUSeconds = int64(n), cpu
	if err == nil {
		h2.OK, h2.Seconds, err = ParseH2load(out)
	}
	if err != nil {
		h2.Skipped = err.Error()
		h2.Seconds = secs
	}
	return h2
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
