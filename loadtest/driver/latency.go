package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
)

// LatencyCompare is the latency comparison (--latency-compare): the same whole-population
// push at the simulators' usual latency and then with Latency added to every answer.
type LatencyCompare struct {
	Latency          string  `json:"latency"`
	Scenario         string  `json:"scenario"`         // the push with the latency
	ZeroPerSecond    float64 `json:"zeroPerSecond"`    // deliveries/s of the all scenario
	LatencyPerSecond float64 `json:"latencyPerSecond"` // deliveries/s of the push with the latency
	Ratio            float64 `json:"ratio"`            // LatencyPerSecond / ZeroPerSecond (target ≥ 0.9)
	// The floor at the same two latencies: h2load against each gateway the push reached, on
	// pushd's connection budget for that gateway. Its rates, mixed in the push's proportions of
	// APNs and FCM deliveries, tell what any client of that budget gets from these simulators on
	// this machine: when the floor's own ratio is below 0.9, the simulators (sharing the cores
	// with the client) cap the rate under latency, not the client's streams in flight.
	Floor                 []LatencyFloor `json:"floor,omitempty"`
	FloorZeroPerSecond    float64        `json:"floorZeroPerSecond,omitempty"`
	FloorLatencyPerSecond float64        `json:"floorLatencyPerSecond,omitempty"`
	FloorRatio            float64        `json:"floorRatio,omitempty"` // FloorLatencyPerSecond / FloorZeroPerSecond
	// VsFloor is pushd's rate under latency over the floor's under the same latency.
	VsFloor float64 `json:"vsFloor,omitempty"`
}

// LatencyFloor is h2load against one gateway's simulator on Connections connections of Streams
// requests in flight, with no added latency and with the comparison's.
type LatencyFloor struct {
	Gateway     string   `json:"gateway"`
	Connections int      `json:"connections"`
	Streams     int      `json:"streams"`
	Zero        FloorRun `json:"zero"`
	Latency     FloorRun `json:"latency"`
}

// latencyFloorConns is pushd's connection budget for gateway, as the comparison's floor uses it.
func (c *Config) latencyFloorConns(gateway string) int {
	if gateway == floorFCM {
		return c.LatencyFloorFCMConns
	}
	return c.LatencyFloorAPNsConns
}

// latencyFloors runs h2load against every gateway the push sc reached, on pushd's connection
// budget for it: first with the latency the simulators add now, then, once reset has taken it
// off, with none. Each gateway's request (its files, its signed or granted token) is made once
// for both runs. Failures to measure are logged and in the runs' Skipped: the floor informs the
// comparison and does not fail the load test; reset's error is returned, the zero runs then
// left out.
func (r *run) latencyFloors(ctx context.Context, files simFiles, sc *ScenarioReport, reset func() error) ([]LatencyFloor, error) {
	dir, err := os.MkdirTemp("", "pushd-latency-floor-")
	if err != nil {
		r.logf("latency floor: cannot make a temp dir: %v", err)
		return nil, reset()
	}
	defer os.RemoveAll(dir)
	var floors []LatencyFloor
	type toSend struct {
		req *floorRequest
		n   int
	}
	var reqs []toSend // floors[i]'s
	for _, gw := range []string{floorAPNs, floorFCM} {
		delivered := sc.ByChannel[gw].Sent
		if delivered == 0 {
			continue
		}
		var req *floorRequest
		n := floorRequests(r.cfg.FloorRequests, delivered)
		if gw == floorAPNs {
			req, err = r.apnsRequest(files, dir, n)
		} else {
			req, err = r.fcmRequest(ctx, files, dir)
		}
		if err != nil {
			r.logf("latency floor %s: %v", gw, err)
		}
		if req == nil {
			continue
		}
		floors = append(floors, LatencyFloor{Gateway: gw, Connections: r.cfg.latencyFloorConns(gw), Streams: r.cfg.FloorStreams})
		reqs = append(reqs, toSend{req, n})
	}
	measure := func(withLatency bool) {
		for i := range floors {
			f := &floors[i]
			fr := r.h2loadRun(ctx, f.Gateway, reqs[i].n, f.Connections, reqs[i].req)
			fr.setFigures()
			when := "no added latency"
			if withLatency {
				f.Latency, when = fr, "the latency"
			} else {
				f.Zero = fr
			}
			if fr.Skipped != "" {
				r.logf("latency floor %s with %s: %s", fr.Name(), when, fr.Skipped)
			} else {
				r.logf("latency floor %s with %s on %d connections: %.0f requests/s", fr.Name(), when, f.Connections, fr.RequestsPerSecond)
			}
		}
	}
	measure(true)
	if err := reset(); err != nil {
		return floors, err
	}
	measure(false)
	return floors, nil
}

// latencyScenario names the all scenario run again with d added to every simulator answer.
func latencyScenario(d time.Duration) string { return ScenarioAll + "@" + d.String() }

// withLatencyScenario inserts the latency comparison's second push right after the all
// scenario; names is returned unchanged without a comparison.
func withLatencyScenario(names []string, d time.Duration) []string {
	if d <= 0 {
		return names
	}
	out := make([]string, 0, len(names)+1)
	for _, n := range names {
		out = append(out, n)
		if n == ScenarioAll {
			out = append(out, latencyScenario(d))
		}
	}
	return out
}

// setSimLatency sets the latency every simulator adds to its answers (POST /_latency).
func (r *run) setSimLatency(ctx context.Context, d time.Duration) error {
	body, err := json.Marshal(map[string]string{"latency": d.String()})
	if err != nil {
		return fmt.Errorf("cannot encode the simulators' latency: %w", err)
	}
	for _, s := range r.cfg.Sims {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/_latency", bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("cannot set the latency of simulator %s: %w", s.URL, err)
		}
		res, err := r.sims.Do(req)
		if err != nil {
			return fmt.Errorf("cannot set the latency of simulator %s: %w", s.URL, err)
		}
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("cannot set the latency of simulator %s: %s %s", s.URL, res.Status, strings.TrimSpace(string(msg)))
		}
	}
	return nil
}

// latencyComparison compares the all scenario with its run under latency d; nil without both.
func latencyComparison(scenarios []ScenarioReport, d time.Duration, floors []LatencyFloor) *LatencyCompare {
	if d <= 0 {
		return nil
	}
	var zero, lat *ScenarioReport
	for i := range scenarios {
		switch scenarios[i].Name {
		case ScenarioAll:
			zero = &scenarios[i]
		case latencyScenario(d):
			lat = &scenarios[i]
		}
	}
	if zero == nil || lat == nil {
		return nil
	}
	c := &LatencyCompare{Latency: d.String(), Scenario: lat.Name, ZeroPerSecond: zero.DeliveriesPerSecond, LatencyPerSecond: lat.DeliveriesPerSecond}
	if c.ZeroPerSecond > 0 {
		c.Ratio = c.LatencyPerSecond / c.ZeroPerSecond
	}
	c.Floor = floors
	apns, fcm := lat.ByChannel[push.ChannelAPNs].Sent, lat.ByChannel[push.ChannelFCM].Sent
	c.FloorZeroPerSecond = mixedRate(floors, apns, fcm, func(f *LatencyFloor) *FloorRun { return &f.Zero })
	c.FloorLatencyPerSecond = mixedRate(floors, apns, fcm, func(f *LatencyFloor) *FloorRun { return &f.Latency })
	c.FloorRatio = Ratio(c.FloorLatencyPerSecond, c.FloorZeroPerSecond)
	c.VsFloor = Ratio(c.LatencyPerSecond, c.FloorLatencyPerSecond)
	return c
}

// mixedRate is the floors' rate for a push of apns and fcm deliveries: the time per request of
// each gateway's run (which of f's runs: run) weighted by its share; 0 unless every gateway
// with deliveries has a measured run.
func mixedRate(floors []LatencyFloor, apns, fcm int64, run func(*LatencyFloor) *FloorRun) float64 {
	total := apns + fcm
	if total == 0 {
		return 0
	}
	var perRequest float64
	for gw, sent := range map[string]int64{floorAPNs: apns, floorFCM: fcm} {
		if sent == 0 {
			continue
		}
		i := slices.IndexFunc(floors, func(f LatencyFloor) bool { return f.Gateway == gw })
		if i < 0 {
			return 0
		}
		fr := run(&floors[i])
		if fr.Skipped != "" || fr.RequestsPerSecond <= 0 {
			return 0
		}
		perRequest += float64(sent) / float64(total) / fr.RequestsPerSecond
	}
	return 1 / perRequest
}

func (c *LatencyCompare) write(b *strings.Builder) {
	if c == nil {
		return
	}
	fmt.Fprintf(b, "latency: %.0f deliveries/s with no added latency, %.0f with %s per answer (%s): ratio %.2f (target ≥ 0.90)\n",
		c.ZeroPerSecond, c.LatencyPerSecond, c.Latency, c.Scenario, c.Ratio)
	if len(c.Floor) == 0 {
		return
	}
	var conns []string
	for _, f := range c.Floor {
		conns = append(conns, fmt.Sprintf("%s %d×%d", f.Gateway, f.Connections, f.Streams))
	}
	if c.FloorZeroPerSecond <= 0 || c.FloorLatencyPerSecond <= 0 {
		fmt.Fprintf(b, "latency floor: h2load on pushd's connections (%s): not measured at both latencies\n", strings.Join(conns, ", "))
		return
	}
	fmt.Fprintf(b, "latency floor: h2load on pushd's connections (%s): %.0f requests/s with no added latency, %.0f with %s: ratio %.2f; pushd with %s reached %.2f of h2load's rate\n",
		strings.Join(conns, ", "), c.FloorZeroPerSecond, c.FloorLatencyPerSecond, c.Latency, c.FloorRatio, c.Latency, c.VsFloor)
}
