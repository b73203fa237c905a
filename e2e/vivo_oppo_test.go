package e2e

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/pushd/pushd/push"
)

var (
	vivoSimLine = regexp.MustCompile(`vivo (https://127\.0\.0\.1:\d+)[,;]`)
	oppoSimLine = regexp.MustCompile(`OPPO (https://127\.0\.0\.1:\d+)[,;]`)
)

// Hybrid vivo and OPPO installations of the dev app get a query push through the in-process
// simulators of `pushd serve --dev --sim` (`make run`): the dev app's _default credentials
// authenticate (vivo MD5 sign and authToken, OPPO SHA-256 sign and auth_token) and each regId
// is delivered once, the overseas OPPO regId too.
func TestE2EVivoOppoPushThroughServe(t *testing.T) {
	data := t.TempDir()
	d := startDevSim(t, data)
	p, c := d.pushd, d.c
	stats, oppoStats := d.sim(t, push.ChannelVivo), d.sim(t, push.ChannelOppo)
	for _, inst := range []map[string]any{
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000001", "vendor": "vivo", "registrationId": "15638535410301000000001", "channels": []string{"news"}},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000002", "vendor": "vivo", "registrationId": "15638535410301000000002", "channels": []string{"news"}},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000003", "vendor": "oppo", "registrationId": "CN_078ad8b8a137cadb14ae5b70cf846312", "channels": []string{"news"}},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000004", "vendor": "OPPO", "registrationId": "OPPO_SG_5b70cf846313", "channels": []string{"news"}},
	} {
		status, body, err := c.call("POST", "/1.1/installations", false, inst)
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create installation: %d %s: %v", status, body, err)
		}
	}
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "Morning briefing", "title": "News",
		"vivo": map[string]any{"classification": 1, "category": "SUBSCRIPTION"}, "oppo": map[string]any{"category": "SUBSCRIPTION", "notify_level": 2}},
		"_notificationChannel": "news", "channels": []string{"news"}})
	rec := c.waitDone(t, oid)
	if rec.Devices != 4 || rec.Successes != 4 || rec.Failures != 0 {
		t.Errorf("record %+v: want devices 4, successes 4", rec)
	}
	st := stats.mustGet(t, true)
	if st.Accepted != 2 || st.PerToken["15638535410301000000001"] != 1 || st.PerToken["15638535410301000000002"] != 1 || st.AuthTokens != 1 {
		t.Errorf("vivo simulator: accepted %d, per token %v, auth tokens %d: want each regId once with one authToken", st.Accepted, st.PerToken, st.AuthTokens)
	}
	ost := oppoStats.mustGet(t, true)
	if ost.Accepted != 2 || ost.PerToken["CN_078ad8b8a137cadb14ae5b70cf846312"] != 1 || ost.PerToken["OPPO_SG_5b70cf846313"] != 1 || ost.AuthTokens != 2 {
		t.Errorf("OPPO simulator: accepted %d, per token %v, auth tokens %d: want each regId once, one auth_token per region host", ost.Accepted, ost.PerToken, ost.AuthTokens)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
