package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/loadtest/webhooksink"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

const webhookSecret = "e2e-webhook-secret-0123456789"

// setWebhook sets the app's webhook through the admin API of the running pushd.
func (c *client) setWebhook(t *testing.T, url string) {
	t.Helper()
	body := fmt.Sprintf(`{"webhook":{"url":%q,"secret":%q}}`, url, webhookSecret)
	req, err := http.NewRequest("PUT", c.base+"/admin/apps/"+c.appID, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("set webhook: %s", res.Status)
	}
}

// byChannel reads a record's per-channel tallies.
func (c *client) byChannel(t *testing.T, oid string) map[string]push.Tally {
	t.Helper()
	status, b, err := c.call("GET", "/1.1/tables/Notifications/"+oid, true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("record %s: %d %s: %v", oid, status, b, err)
	}
	var r struct {
		Counts struct {
			ByChannel map[string]push.Tally `json:"byChannel"`
		} `json:"counts"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Counts.ByChannel
}

// TestE2EWebhookLedgerEqualsRecord: one push to iOS devices (APNs simulator, a share of the
// tokens dead) and own-channel Android devices (some offline until the push is done), with
// the app's webhook set through the admin API and its receiver answering 500 to the first
// requests. The receiver verifies every signature and, after de-duplication by event id,
// holds per channel exactly the record's counts: sent, failed (dead tokens), arrived; each
// device has one event of each kind it went through.
func TestE2EWebhookLedgerEqualsRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		nIOS     = 30
		nAndroid = 20
		offline  = 5
	)
	sink := webhooksink.New(webhookSecret)
	sink.FailNext(3)
	hook := httptest.NewServer(sink)
	t.Cleanup(hook.Close)

	s := startPushsim(t, "-invalid-token-rate", fmt.Sprint(deadRate), "-seed", fmt.Sprint(deadSeed))
	data := t.TempDir()
	c, tokens := prepareData(t, data, s, push.DefaultSettings(), nIOS, "hook")
	t.Setenv("PUSHD_ADMIN_TOKEN", e2eAdminToken)
	p := startPushd(t, data, "--apns-endpoint", s.apnsURL, "--gateway-ca", filepath.Join(s.dir, "ca.pem"),
		"--webhook-flush", "20ms", "--webhook-retry-min", "10ms", "--webhook-retry-max", "100ms")
	c.base = p.base
	c.setWebhook(t, hook.URL+"/pushd")
	ledgers := make([]*sim.Ledger, nAndroid)
	iids := make([]string, nAndroid)
	for i := range iids {
		iids[i] = fmt.Sprintf("e2e-hook-%02d", i)
		ledgers[i] = sim.NewLedger()
		c.createInstallation(t, map[string]any{"deviceType": "android", "installationId": iids[i], "channels": []string{"hook"}})
		if i >= offline {
			c.dialDevice(t, iids[i], ledgers[i])
		}
	}
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "hooked"}, "channels": []string{"hook"}})
	c.waitDone(t, oid)
	for i := range offline {
		c.dialDevice(t, iids[i], ledgers[i])
	}
	waitfor.True(t, pushTimeout, "every arrival counted", func() bool {
		return c.ownRecord(t, oid).Arrivals == nAndroid
	})
	rec := c.byChannel(t, oid)
	want := map[string]int{}
	for ch, tl := range rec {
		want[ch+"/sent"] = int(tl.Sent)
		want[ch+"/failed"] = int(tl.Failed) // the funnel's failed counts the dead tokens too
		want[ch+"/expired"] = int(tl.Expired)
		want[ch+"/arrived"] = int(tl.Arrivals)
	}
	total := 0
	for _, n := range want {
		total += n
	}
	if rec[push.ChannelAPNs].InvalidTokens == 0 || rec[push.ChannelAPNs].Sent == 0 {
		t.Fatalf("record %+v: want both live and dead APNs tokens", rec)
	}
	waitfor.True(t, pushTimeout, fmt.Sprintf("%d events at the receiver", total), func() bool {
		return sink.Ledger().ByPush[oid] != nil && sum(sink.Ledger().ByPush[oid]) == total
	})
	l := sink.Ledger()
	got := map[string]int{}
	for _, ev := range sink.Events() {
		if ev.PushID == oid {
			got[ev.Channel+"/"+ev.Type]++
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: the receiver has %d events, the record counts %d", k, got[k], n)
		}
	}
	if l.BadSigs != 0 || l.Refused != 3 {
		t.Errorf("receiver: %d bad signatures, %d requests refused; want 0 and 3", l.BadSigs, l.Refused)
	}
	// Per device: every APNs token has one event, every own-channel device a sent and an
	// arrived one.
	for _, tok := range tokens {
		if d := l.Devices[webhook.TokenHash(tok)]; sum(d) != 1 {
			t.Errorf("token %s…: events %v, want one", tok[:8], d)
		}
	}
	for _, iid := range iids {
		if d := l.Devices[webhook.TokenHash(iid)]; d["sent"] != 1 || d["arrived"] != 1 || len(d) != 2 {
			t.Errorf("device %s: events %v, want one sent and one arrived", iid, d)
		}
	}
	t.Logf("record %v; receiver: %d events in %d requests (%d refused), %d duplicates dropped", want, l.Events, l.Requests, l.Refused, l.Duplicates)
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestE2EWebhookOverflowDoesNotSlowDelivery: with a webhook buffer of 5 events and a
// receiver that holds every request, a push to iOS devices finishes with every token
// delivered; the events that did not fit are counted in pushd_webhook_events_dropped_total,
// and once the receiver answers it gets the ones that did.
func TestE2EWebhookOverflowDoesNotSlowDelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		nIOS   = 40
		buffer = 5
	)
	sink := webhooksink.New(webhookSecret)
	release := sink.Hold()
	hook := httptest.NewServer(sink)
	t.Cleanup(hook.Close)
	t.Cleanup(release)

	s := startPushsim(t)
	data := t.TempDir()
	c, tokens := prepareData(t, data, s, push.DefaultSettings(), nIOS, "over")
	t.Setenv("PUSHD_ADMIN_TOKEN", e2eAdminToken)
	p := startPushd(t, data, "--apns-endpoint", s.apnsURL, "--gateway-ca", filepath.Join(s.dir, "ca.pem"),
		"--webhook-buffer", fmt.Sprint(buffer), "--webhook-flush", "20ms", "--webhook-retry-min", "10ms", "--webhook-retry-max", "100ms")
	c.base = p.base
	c.setWebhook(t, hook.URL+"/pushd")
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "overflow"}, "channels": []string{"over"}})
	rec := c.waitDone(t, oid)
	st := s.stats.mustGet(t, true)
	short, dups, strangers := deliveries(st.PerToken, tokens, 1)
	if len(short) > 0 || dups > 0 || len(strangers) > 0 || rec.Successes != nIOS {
		t.Fatalf("with the receiver stuck: %d tokens short, %d duplicates, %d strangers, record successes %d of %d",
			len(short), dups, len(strangers), rec.Successes, nIOS)
	}
	dropped := metric(t, p.base, "pushd_webhook_events_dropped_total")
	if dropped != nIOS-buffer {
		t.Fatalf("dropped %v events, want %d (the %d that did not fit a buffer of %d)", dropped, nIOS-buffer, nIOS-buffer, buffer)
	}
	release()
	waitfor.True(t, pushTimeout, "the buffered events at the receiver", func() bool { return sink.Ledger().Events == buffer })
	if l := sink.Ledger(); l.BadSigs != 0 || l.ByType["sent"] != buffer {
		t.Errorf("receiver ledger %+v", l)
	}
	t.Logf("%d tokens delivered with the receiver stuck; %v events dropped and counted, %d delivered later", nIOS, dropped, buffer)
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
