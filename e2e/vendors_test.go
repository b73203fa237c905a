package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

var (
	hmsSimLine = regexp.MustCompile(`HMS (https://127\.0\.0\.1:\d+),`)
	miSimLine  = regexp.MustCompile(`Xiaomi (https://127\.0\.0\.1:\d+)[,;]`)
	// honorSimLine finds the Honor simulator in the start-up line.
	honorSimLine = regexp.MustCompile(`Honor (https://127\.0\.0\.1:\d+),`)
)

// A hybrid installation (vendor, registrationId) of the dev app gets a query push through the
// in-process HMS, Honor and Xiaomi simulators of `pushd serve --dev --sim` (`make run`); a hybrid device whose
// deviceProfile the app has not configured fails with a reason naming it (decisions Push 7).
func TestE2EHybridPushThroughServe(t *testing.T) {
	data := t.TempDir()
	d := startDevSim(t, data)
	p, c := d.pushd, d.c
	honorStats, stats, miStats := d.sim(t, push.ChannelHonor), d.sim(t, push.ChannelHMS), d.sim(t, push.ChannelMi)
	for _, inst := range []map[string]any{
		{"deviceType": "android", "installationId": "a0a0a0a0-0000-4000-8000-000000000001", "vendor": "HMS", "registrationId": "IQAAAACy0hybridA", "channels": []string{"deals"}},
		{"deviceType": "android", "installationId": "a0a0a0a0-0000-4000-8000-000000000003", "vendor": "mi", "registrationId": "fakeMiRegIdC", "channels": []string{"deals"}},
		{"deviceType": "android", "installationId": "a0a0a0a0-0000-4000-8000-000000000002", "vendor": "hms", "registrationId": "IQAAAACy0hybridB", "deviceProfile": "beta", "channels": []string{"deals"}},
		{"deviceType": "android", "installationId": "a0a0a0a0-0000-4000-8000-000000000004", "vendor": "Honor", "registrationId": "AQAAAACy0honorD", "channels": []string{"deals"}},
	} {
		status, body, err := c.call("POST", "/1.1/installations", false, inst)
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create installation: %d %s: %v", status, body, err)
		}
	}
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "Half price today", "title": "Deals"}, "channels": []string{"deals"}})
	rec := c.waitDone(t, oid)
	if rec.Devices != 4 || rec.Successes != 3 || rec.Failures != 1 {
		t.Errorf("record %+v: want devices 4, successes 3, failures 1", rec)
	}
	want := `hybrid push configuration "beta" of vendor hms is not configured for this app`
	if len(rec.Errors) != 1 || !strings.Contains(rec.Errors[0], want) {
		t.Errorf("record errors %q, want %q", rec.Errors, want)
	}
	st := stats.mustGet(t, true)
	if st.PerToken["IQAAAACy0hybridA"] != 1 || st.Accepted != 1 {
		t.Errorf("HMS simulator: accepted %d, per token %v: want one push to the _default device", st.Accepted, st.PerToken)
	}
	if st := miStats.mustGet(t, true); st.PerToken["fakeMiRegIdC"] != 1 || st.Accepted != 1 {
		t.Errorf("Xiaomi simulator: accepted %d, per token %v: want one push to the mi device", st.Accepted, st.PerToken)
	}
	if st := honorStats.mustGet(t, true); st.PerToken["AQAAAACy0honorD"] != 1 || st.Accepted != 1 {
		t.Errorf("Honor simulator: accepted %d, per token %v: want one push to the honor device", st.Accepted, st.PerToken)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
