package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// deadRate and deadSeed make pushsim answer 410 Unregistered for the tokens sim.IsDeadToken
// picks with them (pushsim's -invalid-token-rate, -seed).
const (
	deadRate = 0.5
	deadSeed = 1
)

// e2eToken returns the first test token from i on that the simulator treats as dead (or live).
func e2eToken(t *testing.T, i int, dead bool) string {
	t.Helper()
	for ; i < 1000; i++ {
		tok := fmt.Sprintf("%064x", 0xc0a7000000+i)
		if sim.IsDeadToken(tok, deadRate, deadSeed) == dead {
			return tok
		}
	}
	t.Fatal("no token found")
	return ""
}

// sent returns the payloads the simulator accepted for token, oldest first.
func (s *simClient) sent(t *testing.T, token string) []string {
	t.Helper()
	all := s.simSent(t)
	var out []string
	for _, s := range all {
		if s.Target == token {
			out = append(out, string(s.Body))
		}
	}
	return out
}

func (c *client) createInstallation(t *testing.T, fields map[string]any) string {
	t.Helper()
	status, b, err := c.call("POST", "/1.1/installations", false, fields)
	if err != nil || status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("create installation: %d %s: %v", status, b, err)
	}
	var r struct {
		ObjectID string `json:"objectId"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.ObjectID == "" {
		t.Fatalf("create installation answer %s: %v", b, err)
	}
	return r.ObjectID
}

func (c *client) pushDevices(t *testing.T, body any) string {
	t.Helper()
	status, b, err := c.call("POST", "/1.1/push/devices", true, body)
	if err != nil || status != http.StatusOK {
		t.Fatalf("push/devices: status %d %s: %v", status, b, err)
	}
	var r struct {
		ObjectID string `json:"objectId"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.ObjectID == "" {
		t.Fatalf("push/devices answer %s: %v", b, err)
	}
	return r.ObjectID
}

// Issue 12 item 8: a "badge": "Increment" push gives each iOS installation its stored badge + 1
// and stores it, through the real binary and the APNs simulator.
func TestE2EBadgeIncrement(t *testing.T) {
	s := startPushsim(t, "-record", "100")
	data := t.TempDir()
	c, _ := prepareData(t, data, s, appSettings(), 0, "c")
	p := startPushd(t, data, "--gateway-ca", filepath.Join(s.dir, "ca.pem"), "--apns-endpoint", s.apnsURL)
	c.base = p.base

	tokA, tokB := e2eToken(t, 0, false), e2eToken(t, 100, false)
	oidA := c.createInstallation(t, map[string]any{"deviceType": "ios", "deviceToken": tokA, "channels": []string{"c"}, "badge": 2})
	c.createInstallation(t, map[string]any{"deviceType": "ios", "deviceToken": tokB, "channels": []string{"c"}})
	for _, want := range [][2]int{{3, 1}, {4, 2}} {
		oid := c.push(t, map[string]any{"data": map[string]any{"alert": "new mail", "badge": "Increment"}, "channels": []string{"c"}})
		if rec := c.waitDone(t, oid); rec.IOSSuccesses != 2 {
			t.Fatalf("record %+v, want 2 iOS successes", rec)
		}
		for i, tok := range []string{tokA, tokB} {
			got := s.stats.sent(t, tok)
			if w := fmt.Sprintf(`{"aps":{"alert":"new mail","badge":%d}}`, want[i]); len(got) == 0 || got[len(got)-1] != w {
				t.Errorf("token %d got %q, want last %s", i, got, w)
			}
		}
	}
	status, b, err := c.call("GET", "/1.1/installations/"+oidA, true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("get installation: %d %s: %v", status, b, err)
	}
	if n := push.DocBadge(b); n != 4 {
		t.Errorf("installation after two pushes: %s, want badge 4", b)
	}
}

// Issue 12 item 8: a /1.1/push/devices token with no installation that APNs calls dead is
// remembered: the next push to it is dropped without asking APNs and counted as an invalid
// token, until the token is registered again.
func TestE2EDeadListedTokenRemembered(t *testing.T) {
	s := startPushsim(t, "-invalid-token-rate", fmt.Sprint(deadRate), "-seed", fmt.Sprint(deadSeed))
	data := t.TempDir()
	c, _ := prepareData(t, data, s, appSettings(), 0, "c")
	p := startPushd(t, data, "--gateway-ca", filepath.Join(s.dir, "ca.pem"), "--apns-endpoint", s.apnsURL)
	c.base = p.base

	dead, live := e2eToken(t, 0, true), e2eToken(t, 0, false)
	body := map[string]any{"device_type": "ios", "device_ids": []string{dead, live}, "data": map[string]any{"alert": "hi"}}
	for i := 1; i <= 2; i++ {
		rec := c.waitDone(t, c.pushDevices(t, body))
		if rec.InvalidTokens != 1 || rec.Successes != 1 || rec.Failures != 0 {
			t.Errorf("push %d: record %+v, want 1 invalid token and 1 success", i, rec)
		}
		st := s.stats.mustGet(t, true)
		if st.ByReason["Unregistered"] != 1 || st.PerToken[live] != int64(i) {
			t.Errorf("push %d: simulator answered Unregistered %d times and accepted %d for the live token; want 1 and %d",
				i, st.ByReason["Unregistered"], st.PerToken[live], i)
		}
	}
	// The app registers the token again: pushes to it go out again.
	c.createInstallation(t, map[string]any{"deviceType": "ios", "deviceToken": dead})
	c.waitDone(t, c.pushDevices(t, body))
	if st := s.stats.mustGet(t, false); st.ByReason["Unregistered"] != 2 {
		t.Errorf("after the token was registered again: Unregistered answered %d times, want 2", st.ByReason["Unregistered"])
	}
}

func appSettings() push.AppSettings {
	st := push.DefaultSettings()
	st.Buckets = 16
	return st
}
