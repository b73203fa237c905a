package telemetry

import (
	"bytes"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
)

func TestTelemetryRegistryWritesSets(t *testing.T) {
	r := NewRegistry(false)
	a := r.Add(metrics.NewSet())
	b := r.Add(metrics.NewSet())
	a.NewCounter(`pushd_a_total`).Inc()
	b.NewCounter(`pushd_b_total{x="y"}`).Add(2)
	var buf bytes.Buffer
	r.WritePrometheus(&buf)
	out := buf.String()
	for _, want := range []string{"pushd_a_total 1", `pushd_b_total{x="y"} 2`} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestTelemetryLoggerLevels(t *testing.T) {
	if _, err := NewLogger(LoggerConfig{Level: "nope"}); err == nil {
		t.Fatal("bad level accepted")
	}
	for _, dev := range []bool{false, true} {
		l, err := NewLogger(LoggerConfig{Dev: dev, Level: "warn"})
		if err != nil {
			t.Fatal(err)
		}
		if l.Core().Enabled(-1) {
			t.Fatal("debug enabled at warn level")
		}
	}
}
