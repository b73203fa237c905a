package e2e

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// putSettings changes an app's settings through the admin API.
func putSettings(t *testing.T, base, appID string, settings map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"settings": settings})
	req, err := http.NewRequest(http.MethodPut, base+"/admin/apps/"+appID, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		t.Fatalf("set settings %v: %d %s", settings, resp.StatusCode, body.String())
	}
}

// Through `pushd serve --dev --sim`: an app's marketing rules, set by the admin API, hold the
// marketing pushes of the real binary — a second marketing push the same day fails daily_cap and
// never reaches the HMS simulator, a system push still does, and a marketing push inside the
// quiet hours fails quiet_hours; a bad message_class is refused.
func TestE2EMessageClassMarketingRules(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	t.Setenv("PUSHD_ADMIN_TOKEN", e2eAdminToken)
	data := t.TempDir()
	p := startPushdSim(t, data)
	line := p.waitOutput(regexp.MustCompile(`gateway simulators: .*`), startTimeout)
	m := hmsSimLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no HMS simulator in the start-up line %q", line)
	}
	hms := newSimClient(m[1], &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // loopback test simulator
	b, err := os.ReadFile(filepath.Join(data, "dev-app.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys struct{ AppID, AppKey, MasterKey string }
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	c := newClient(p.base, keys.AppID, keys.AppKey, keys.MasterKey)
	const tok = "IQAAAACy0classTok"
	c.createInstallation(t, map[string]any{"deviceType": "android", "installationId": "c1a55000-0000-4000-8000-000000000001",
		"vendor": "HMS", "registrationId": tok, "channels": []string{"cls"}})
	putSettings(t, p.base, keys.AppID, map[string]any{"marketing": map[string]any{"dailyCap": 1}})

	send := func(class string) record {
		t.Helper()
		body := map[string]any{"data": map[string]any{"alert": "class " + class}, "channels": []string{"cls"}}
		if class != "" {
			body["message_class"] = class
		}
		return c.waitDone(t, c.push(t, body))
	}
	delivered := func() int64 { return hms.mustGet(t, true).PerToken[tok] }
	if rec := send(push.ClassMarketing); rec.Successes != 1 || delivered() != 1 {
		t.Fatalf("first marketing push: %+v, HMS got %d", rec, delivered())
	}
	if rec := send(push.ClassMarketing); rec.Failures != 1 || !slices.Contains(rec.Errors, push.ReasonDailyCap) || delivered() != 1 {
		t.Fatalf("second marketing push: %+v, HMS got %d; want failed %s", rec, delivered(), push.ReasonDailyCap)
	}
	if rec := send(""); rec.Successes != 1 || delivered() != 2 {
		t.Fatalf("system push: %+v, HMS got %d", rec, delivered())
	}

	// Quiet hours around the wall clock (the binary's clock): an hour each side.
	now := time.Now().UTC()
	putSettings(t, p.base, keys.AppID, map[string]any{"marketing": map[string]any{"quietHours": map[string]any{
		"from": now.Add(-time.Hour).Format("15:04"), "to": now.Add(time.Hour).Format("15:04")}}})
	if rec := send(push.ClassMarketing); rec.Failures != 1 || !slices.Contains(rec.Errors, push.ReasonQuietHours) || delivered() != 2 {
		t.Fatalf("marketing push in quiet hours: %+v, HMS got %d; want failed %s", rec, delivered(), push.ReasonQuietHours)
	}
	if status, body, _ := c.call("POST", "/1.1/push", true, map[string]any{"data": map[string]any{"alert": "x"}, "message_class": "promo"}); status != http.StatusBadRequest {
		t.Errorf("message_class promo: %d %s, want 400", status, body)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
