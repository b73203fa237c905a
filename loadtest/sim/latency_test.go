package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func latencyCall(t *testing.T, h http.Handler, method, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/_latency", strings.NewReader(body)))
	if rec.Code != http.StatusOK {
		return rec.Code, ""
	}
	var out struct {
		Latency string `json:"latency"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s /_latency: %v in %q", method, err, rec.Body)
	}
	return rec.Code, out.Latency
}

// The load test's latency comparison changes a running simulator's latency between pushes:
// POST /_latency sets it, GET reads it, a bad value is refused and changes nothing.
func TestSimLatencyControl(t *testing.T) {
	s, err := NewAPNs(APNsConfig{Sandbox: true, Knobs: Knobs{Latency: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if code, got := latencyCall(t, s, http.MethodGet, ""); code != http.StatusOK || got != "5ms" {
		t.Fatalf("GET /_latency = %d %q, want 200 5ms (the -latency flag)", code, got)
	}
	if code, got := latencyCall(t, s, http.MethodPost, `{"latency":"20ms"}`); code != http.StatusOK || got != "20ms" {
		t.Fatalf("POST /_latency 20ms = %d %q, want 200 20ms", code, got)
	}
	for _, bad := range []string{`{"latency":"-1ms"}`, `{"latency":"soon"}`, `[`} {
		if code, _ := latencyCall(t, s, http.MethodPost, bad); code != http.StatusBadRequest {
			t.Errorf("POST /_latency %s = %d, want 400", bad, code)
		}
	}
	if code, _ := latencyCall(t, s, http.MethodDelete, ""); code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /_latency = %d, want 405", code)
	}
	if _, got := latencyCall(t, s, http.MethodGet, ""); got != "20ms" {
		t.Fatalf("latency after refused changes = %q, want 20ms", got)
	}
}

// The latency set at run time is what every answer waits: on synctest's clock the wait is
// exactly it, and 0 answers at once.
func TestSimLatencyApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFaults(Knobs{})
		for _, d := range []time.Duration{20 * time.Millisecond, 0, 3 * time.Second} {
			f.setLatency(d)
			start := time.Now()
			if !f.wait(context.Background(), start) {
				t.Fatal("wait gave up")
			}
			if got := time.Since(start); got != d {
				t.Errorf("latency %v: the answer waited %v", d, got)
			}
		}
	})
}
