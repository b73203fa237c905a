package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
)

var mzSimLine = regexp.MustCompile(`Meizu (https://127\.0\.0\.1:\d+)[,;]`)

// TestE2EMeizuPushThroughServe: Meizu installations of the dev app (vendor "meizu" or "mz")
// get a query push through the in-process Meizu simulator of `pushd serve --dev --sim`, with
// data.mz's title; a pushId Meizu calls illegal (110003) deletes its installation; a silent
// push fails the Meizu targets with the reason in the record; an installation with an unknown
// vendor is refused.
func TestE2EMeizuPushThroughServe(t *testing.T) {
	data := t.TempDir()
	d := startDevSim(t, data)
	p, c, stats := d.pushd, d.c, d.sim(t, push.ChannelMz)
	var illegalID string
	for i, inst := range []map[string]any{
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000001", "vendor": "meizu", "registrationId": "RFAKEmzPushIdA", "channels": []string{"mz"}},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000002", "vendor": "mz", "registrationId": "RFAKEmzPushIdB", "channels": []string{"mz"}},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000003", "vendor": "mz", "registrationId": `RFAKE"illegal`, "channels": []string{"mz"}},
	} {
		status, body, err := c.call("POST", "/1.1/installations", false, inst)
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create installation: %d %s: %v", status, body, err)
		}
		if i == 2 {
			var r struct{ ObjectID string }
			_ = json.Unmarshal(body, &r)
			illegalID = r.ObjectID
		}
	}
	status, body, err := c.call("POST", "/1.1/installations", false, map[string]any{"deviceType": "android",
		"installationId": "b0b0b0b0-0000-4000-8000-000000000004", "vendor": "nokia", "registrationId": "x1"})
	if err != nil || status != http.StatusBadRequest || !strings.Contains(string(body), "nokia") {
		t.Fatalf("unknown vendor: %d %s: %v", status, body, err)
	}

	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "Half price today", "mz": map[string]any{"title": "Meizu deals"}}, "channels": []string{"mz"}})
	rec := c.waitDone(t, oid)
	if rec.Devices != 3 || rec.Successes != 2 || rec.InvalidTokens != 1 {
		t.Errorf("record %+v: want devices 3, successes 2, invalid tokens 1", rec)
	}
	st := stats.mustGet(t, true)
	if st.PerToken["RFAKEmzPushIdA"] != 1 || st.PerToken["RFAKEmzPushIdB"] != 1 || st.Accepted != 2 || st.ByReason["110003"] != 1 {
		t.Errorf("Meizu simulator: accepted %d, per token %v, by reason %v", st.Accepted, st.PerToken, st.ByReason)
	}
	waitfor.True(t, pushTimeout, "the illegal pushId's installation to be deleted", func() bool {
		status, _, err := c.call("GET", "/1.1/installations/"+illegalID, true, nil)
		return err == nil && status == http.StatusNotFound
	})

	oid = c.push(t, map[string]any{"data": map[string]any{"alert": "sync", "silent": true}, "channels": []string{"mz"}})
	rec = c.waitDone(t, oid)
	if rec.Successes != 0 || rec.Failures != 2 || len(rec.Errors) == 0 || !strings.Contains(strings.Join(rec.Errors, ";"), "silent") {
		t.Errorf("silent push record %+v: want the 2 Meizu targets failed with the reason", rec)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
