package e2e

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

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
	d := startDevSim(t, data)
	p, keys, c, hms := d.pushd, d.keys, d.c, d.sim(t, push.ChannelHMS)
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
