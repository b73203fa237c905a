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

var vivoSimLine = regexp.MustCompile(`vivo (https://127\.0\.0\.1:\d+)[,;]`)

// A hybrid vivo installation of the dev app gets a query push through the in-process vivo
// simulator of `pushd serve --dev --sim` (`make run`): the dev app's _default vivo credentials
// authenticate (MD5 sign, authToken) and the regId is delivered once.
func TestE2EVivoPushThroughServe(t *testing.T) {
	data := t.TempDir()
	p := startPushd(t, data, "--dev", "--sim", "--sim-apns-addr", "127.0.0.1:0", "--sim-fcm-addr", "127.0.0.1:0", "--sim-hms-addr", "127.0.0.1:0",
		"--sim-mi-addr", "127.0.0.1:0", "--sim-vivo-addr", "127.0.0.1:0")
	line := p.waitOutput(regexp.MustCompile(`gateway simulators: .*`), startTimeout)
	m := vivoSimLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no vivo simulator in the start-up line %q", line)
	}
	stats := newSimClient(m[1], &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // loopback test simulator

	b, err := os.ReadFile(filepath.Join(data, "dev-app.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys struct{ AppID, AppKey, MasterKey string }
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	c := newClient(p.base, keys.AppID, keys.AppKey, keys.MasterKey)
	for _, inst := range []map[string]any{
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000001", "vendor": "vivo", "registrationId": "15638535410301000000001", "channels": []string{"news"}},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000002", "vendor": "vivo", "registrationId": "15638535410301000000002", "channels": []string{"news"}},
	} {
		status, body, err := c.call("POST", "/1.1/installations", false, inst)
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create installation: %d %s: %v", status, body, err)
		}
	}
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "Morning briefing", "title": "News",
		"vivo": map[string]any{"classification": 1, "category": "SUBSCRIPTION"}}, "channels": []string{"news"}})
	rec := c.waitDone(t, oid)
	if rec.Devices != 2 || rec.Successes != 2 || rec.Failures != 0 {
		t.Errorf("record %+v: want devices 2, successes 2", rec)
	}
	st := stats.mustGet(t, true)
	if st.Accepted != 2 || st.PerToken["15638535410301000000001"] != 1 || st.PerToken["15638535410301000000002"] != 1 || st.AuthTokens != 1 {
		t.Errorf("vivo simulator: accepted %d, per token %v, auth tokens %d: want each regId once with one authToken", st.Accepted, st.PerToken, st.AuthTokens)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
