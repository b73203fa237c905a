package e2e

import (
	"net/http"
	"testing"

	"github.com/pushd/pushd/push"
)

// `pushd serve --dev --sim` is what `make run` starts (issue 5, "Seeing it work"): with the
// dev app's keys from dev-app.json, an iOS installation created over the API gets a channel
// push delivered by the in-process APNs simulator, and the record counts it.
//
// Not covered here: an invalid token. The in-process simulator has no HTTP control to mark a
// token dead (only /_stats, /_sent, /_reset); the sender tests cover that outcome.
func TestE2EPushDeliveredThroughServe(t *testing.T) {
	data := t.TempDir()
	d := startDevSim(t, data)
	// The in-process simulator's certificate is not written anywhere: sim trusts it blindly, on loopback.
	p, c, stats := d.pushd, d.c, d.sim(t, push.ChannelAPNs)

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
