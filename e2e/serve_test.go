package e2e

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var simLine = regexp.MustCompile(`gateway simulators: APNs (https://127\.0\.0\.1:\d+) `)

// `pushd serve --dev --sim` is what `make run` starts (issue 5, "Seeing it work"): with the
// dev app's keys from dev-app.json, an iOS installation created over the API gets a channel
// push delivered by the in-process APNs simulator, and the record counts it.
//
// Not covered here: an invalid token. The in-process simulator has no HTTP control to mark a
// token dead (only /_stats, /_sent, /_reset); the sender tests cover that outcome.
func TestE2EPushDeliveredThroughServe(t *testing.T) {
	data := t.TempDir()
	p := startPushdSim(t, data)
	simURL := p.waitOutput(simLine, startTimeout)
	// The in-process simulator's certificate is not written anywhere: trust it blindly, on loopback.
	stats := newSimClient(simURL, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // loopback test simulator

	b, err := os.ReadFile(filepath.Join(data, "dev-app.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys struct{ AppID, AppKey, MasterKey string }
	if err := json.Unmarshal(b, &keys); err != nil || keys.AppID == "" || keys.AppKey == "" || keys.MasterKey == "" {
		t.Fatalf("dev-app.json %s: %v", b, err)
	}
	c := newClient(p.base, keys.AppID, keys.AppKey, keys.MasterKey)

	const token = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
	status, body, err := c.call("POST", "/1.1/installations", false, map[string]any{
		"deviceType": "ios", "deviceToken": token, "channels": []string{"deals"}, "apnsTopic": "com.example.pushd",
	})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("create installation: %d %s: %v", status, body, err)
	}
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "Half price today", "badge": 1}, "channels": []string{"deals"}})
	rec := c.waitDone(t, oid)
	if rec.Devices != 1 || rec.Successes != 1 || rec.IOSSuccesses != 1 || rec.Failures != 0 {
		t.Errorf("record %+v: want devices 1, successes 1, iosSuccesses 1, failures 0", rec)
	}
	st := stats.mustGet(t, true)
	if st.PerToken[token] != 1 || st.Accepted != 1 {
		t.Errorf("simulator: accepted %d, per token %v: want exactly one push to the installation's token", st.Accepted, st.PerToken)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
