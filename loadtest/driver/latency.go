package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// LatencyCompare is the latency comparison (--latency-compare): the same whole-population
// push at the simulators' usual latency and then with Latency added to every answer.
type LatencyCompare struct {
	Latency          string  `json:"latency"`
	Scenario         string  `json:"scenario"`         // the push with the latency
	ZeroPerSecond    float64 `json:"zeroPerSecond"`    // deliveries/s of the all scenario
	LatencyPerSecond float64 `json:"latencyPerSecond"` // deliveries/s of the push with the latency
	Ratio            float64 `json:"ratio"`            // LatencyPerSecond / ZeroPerSecond (target ≥ 0.9)
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
func latencyComparison(scenarios []ScenarioReport, d time.Duration) *LatencyCompare {
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
	return c
}

func (c *LatencyCompare) write(b *strings.Builder) {
	if c == nil {
		return
	}
	fmt.Fprintf(b, "latency: %.0f deliveries/s with no added latency, %.0f with %s per answer (%s): ratio %.2f (target ≥ 0.90)\n",
		c.ZeroPerSecond, c.LatencyPerSecond, c.Latency, c.Scenario, c.Ratio)
}
