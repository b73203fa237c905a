package e2e

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/pushd/pushd/push"
)

// gatewaySimsLine is the start-up line of `pushd serve --sim` that names its simulators.
var gatewaySimsLine = regexp.MustCompile(`gateway simulators: .*`)

// simLines find each delivery channel's simulator in the gateway simulators' start-up line.
var simLines = map[string]*regexp.Regexp{
	push.ChannelAPNs: apnsSimURL, push.ChannelFCM: fcmSimURL, push.ChannelHMS: hmsSimLine, push.ChannelHonor: honorSimLine,
	push.ChannelMi: miSimLine, push.ChannelMz: mzSimLine, push.ChannelVivo: vivoSimLine, push.ChannelOppo: oppoSimLine,
}

// devAppKeys are the dev app's keys, as `pushd serve --dev` writes them to dev-app.json.
type devAppKeys struct{ AppID, AppKey, MasterKey string }

// devSim is a running `pushd serve --dev --sim`: the process, the dev app's keys, a client of
// the dev app, and the start-up line that names the gateway simulators.
type devSim struct {
	*pushd
	keys devAppKeys
	c    *client
	line string
}

// startDevSim starts `pushd serve --dev --sim` on data (then args), waits for its gateway
// simulators' start-up line and reads the dev app's keys.
func startDevSim(t *testing.T, data string, args ...string) *devSim {
	t.Helper()
	p := startPushdSim(t, data, args...)
	line := p.waitOutput(gatewaySimsLine, startTimeout)
	b, err := os.ReadFile(filepath.Join(data, "dev-app.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys devAppKeys
	if err := json.Unmarshal(b, &keys); err != nil || keys.AppID == "" || keys.AppKey == "" || keys.MasterKey == "" {
		t.Fatalf("dev-app.json %s: %v", b, err)
	}
	return &devSim{pushd: p, keys: keys, c: newClient(p.base, keys.AppID, keys.AppKey, keys.MasterKey), line: line}
}

// sim returns a client of the in-process simulator of delivery channel ch (push.Channel*).
func (d *devSim) sim(t *testing.T, ch string) *simClient {
	t.Helper()
	re, ok := simLines[ch]
	if !ok {
		t.Fatalf("no simulator for channel %q", ch)
	}
	m := re.FindStringSubmatch(d.line)
	if m == nil {
		t.Fatalf("no %s simulator in the start-up line %q", ch, d.line)
	}
	return newSimClient(m[1], &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // loopback test simulator
}

// sims returns a client of the in-process simulator of each of the delivery channels chs.
func (d *devSim) sims(t *testing.T, chs ...string) map[string]*simClient {
	t.Helper()
	out := make(map[string]*simClient, len(chs))
	for _, ch := range chs {
		out[ch] = d.sim(t, ch)
	}
	return out
}

// adminPut changes an app through the admin API.
func adminPut(t *testing.T, base, appID string, body map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
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
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		t.Fatalf("PUT /admin/apps/%s %s: %d %s", appID, b, resp.StatusCode, out.String())
	}
}

// putSettings changes an app's settings through the admin API.
func putSettings(t *testing.T, base, appID string, settings map[string]any) {
	t.Helper()
	adminPut(t, base, appID, map[string]any{"settings": settings})
}

// setAppPolicy sets the app's channelPolicy through the admin API.
func setAppPolicy(t *testing.T, base, appID, policy string) {
	t.Helper()
	putSettings(t, base, appID, map[string]any{"channelPolicy": policy})
}
