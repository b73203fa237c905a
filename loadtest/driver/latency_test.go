package driver

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLatencyCompareScenarios(t *testing.T) {
	d := 20 * time.Millisecond
	if got := withLatencyScenario([]string{ScenarioChannel, ScenarioAll, ScenarioDirect}, d); !slices.Equal(got, []string{ScenarioChannel, ScenarioAll, "all@20ms", ScenarioDirect}) {
		t.Errorf("scenarios = %v, want the all push again with the latency right after it", got)
	}
	if got := withLatencyScenario([]string{ScenarioAll}, 0); !slices.Equal(got, []string{ScenarioAll}) {
		t.Errorf("no comparison: scenarios = %v", got)
	}
	reps := []ScenarioReport{{Name: ScenarioAll, DeliveriesPerSecond: 10000}, {Name: "all@20ms", DeliveriesPerSecond: 9500}}
	c := latencyComparison(reps, d)
	if c == nil || c.ZeroPerSecond != 10000 || c.LatencyPerSecond != 9500 || c.Ratio != 0.95 || c.Latency != "20ms" {
		t.Fatalf("comparison = %+v, want 10000 and 9500 deliveries/s, ratio 0.95", c)
	}
	var b strings.Builder
	c.write(&b)
	if !strings.Contains(b.String(), "ratio 0.95") {
		t.Errorf("report line %q lacks the ratio", b.String())
	}
	if latencyComparison(reps[:1], d) != nil {
		t.Error("a comparison without the push under latency")
	}
}

func TestLatencyCompareNeedsAll(t *testing.T) {
	c := Config{PushdURL: "http://127.0.0.1:1", AdminToken: "x", Sims: []Sim{{URL: "https://127.0.0.1:2"}}, SimDir: "d",
		Installations: 1, IOSFraction: 0.5, DeadFraction: 0.2, Pushes: []string{ScenarioChannel}, LatencyCompare: 20 * time.Millisecond}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "latency-compare") {
		t.Errorf("Validate = %v, want the latency comparison refused without the all scenario", err)
	}
	c.Pushes = []string{ScenarioAll}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
}
