package driver

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
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
	c := latencyComparison(reps, d, nil)
	if c == nil || c.ZeroPerSecond != 10000 || c.LatencyPerSecond != 9500 || c.Ratio != 0.95 || c.Latency != "20ms" {
		t.Fatalf("comparison = %+v, want 10000 and 9500 deliveries/s, ratio 0.95", c)
	}
	var b strings.Builder
	c.write(&b)
	if !strings.Contains(b.String(), "ratio 0.95") {
		t.Errorf("report line %q lacks the ratio", b.String())
	}
	if strings.Contains(b.String(), "latency floor") {
		t.Errorf("report %q has a floor line without a floor", b.String())
	}
	if latencyComparison(reps[:1], d, nil) != nil {
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

// TestLatencyCompareFloor: the floor's rates are mixed in the push's proportions by time per
// request, and pushd's rate under latency is given over the floor's under the same latency.
func TestLatencyCompareFloor(t *testing.T) {
	d := 20 * time.Millisecond
	run := func(ok int64, secs float64) FloorRun {
		fr := FloorRun{Tool: "h2load", Requests: ok, OK: ok, Seconds: secs}
		fr.setFigures()
		return fr
	}
	floors := []LatencyFloor{
		{Gateway: floorAPNs, Connections: 4, Streams: 100, Zero: run(20000, 1), Latency: run(20000, 2)},    // 20k/s, 10k/s
		{Gateway: floorFCM, Connections: 16, Streams: 100, Zero: run(10000, 1), Latency: run(10000, 1.25)}, // 10k/s, 8k/s
	}
	mixed := map[string]push.Tally{push.ChannelAPNs: {Sent: 500}, push.ChannelFCM: {Sent: 500}}
	reps := []ScenarioReport{{Name: ScenarioAll, DeliveriesPerSecond: 12000}, {Name: "all@20ms", DeliveriesPerSecond: 6000, ByChannel: mixed}}
	c := latencyComparison(reps, d, floors)
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9*want }
	// Half the requests at 1/20000 s and half at 1/10000 s: 13,333/s; under latency 1/10000
	// and 1/8000: 8,888/s.
	if !near(c.FloorZeroPerSecond, 40000.0/3) || !near(c.FloorLatencyPerSecond, 80000.0/9) {
		t.Fatalf("floor rates %v and %v, want 13333 and 8889", c.FloorZeroPerSecond, c.FloorLatencyPerSecond)
	}
	if !near(c.FloorRatio, 2.0/3) || !near(c.VsFloor, 6000/(80000.0/9)) {
		t.Errorf("floor ratio %v, pushd over the floor %v", c.FloorRatio, c.VsFloor)
	}
	var b strings.Builder
	c.write(&b)
	if !strings.Contains(b.String(), "apns 4×100, fcm 16×100") || !strings.Contains(b.String(), "ratio 0.67") || !strings.Contains(b.String(), "reached 0.68 of h2load's rate") {
		t.Errorf("report %q lacks the floor's connections, ratio or pushd's share of it", b.String())
	}

	// An FCM-only push needs only FCM's floor; a skipped run leaves the floor unmeasured.
	reps[1].ByChannel = map[string]push.Tally{push.ChannelFCM: {Sent: 1000}}
	if c := latencyComparison(reps, d, floors[1:]); !near(c.FloorLatencyPerSecond, 8000) || !near(c.VsFloor, 0.75) {
		t.Errorf("FCM only: floor %v, pushd over it %v, want 8000 and 0.75", c.FloorLatencyPerSecond, c.VsFloor)
	}
	floors[1].Latency.Skipped = "only 10 of 10000 requests answered 200"
	c = latencyComparison(reps, d, floors)
	b.Reset()
	c.write(&b)
	if c.FloorLatencyPerSecond != 0 || c.VsFloor != 0 || !strings.Contains(b.String(), "not measured at both latencies") {
		t.Errorf("a skipped floor run: %+v, report %q", c, b.String())
	}
}
