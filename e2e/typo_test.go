package e2e

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestE2ETypoPushesSendNothing is issue 12's scenario: an app server misspells a push
// parameter ("chanels" for "channels", the retired "cql", "Where"). Before, pushd ignored the
// unknown name and sent the push to every device of the app. Now each such push, to either
// endpoint, is refused with 400 {code, error} naming the parameter, and nothing is stored or
// sent: the one correct push afterwards is the only record, and the simulator saw exactly its
// deliveries.
func TestE2ETypoPushesSendNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	const n = 10 // installations, all on channel "news"; none on "vip"
	s := startPushsim(t)
	data := t.TempDir()
	c, tokens := prepareData(t, data, s, push.DefaultSettings(), n, "news")
	p := startPushd(t, data,
		"--roles", "api,fanout,scheduler",
		"--apns-endpoint", s.apnsURL,
		"--gateway-ca", filepath.Join(s.dir, "ca.pem"))
	c.base = p.base

	alert := map[string]any{"alert": "VIP only: 50% off"}
	for _, tc := range []struct {
		path, param string
		body        any
	}{
		{"/1.1/push", "chanels", map[string]any{"data": alert, "chanels": []string{"vip"}}},
		{"/1.1/push", "wehre", map[string]any{"data": alert, "wehre": map[string]any{"channels": "vip"}}},
		{"/1.1/push", "cql", map[string]any{"data": alert, "cql": "select * from _Installation where channels = 'vip'"}},
		{"/1.1/push", "Where", map[string]any{"data": alert, "Where": map[string]any{"channels": "vip"}}},
		{"/1.1/push", "channels ", map[string]any{"data": alert, "channels ": "vip"}},
		{"/1.1/push", "expiration_intervall", map[string]any{"data": alert, "channels": "news", "expiration_intervall": 60}},
		{"/1.1/push", "push_tiem", map[string]any{"data": alert, "channels": "news", "push_tiem": "2099-01-01T00:00:00Z"}},
		{"/1.1/push/devices", "prdo", map[string]any{"device_type": "ios", "device_ids": tokens[:2], "data": alert, "prdo": "dev"}},
		{"/1.1/push/devices", "flow_control", map[string]any{"device_type": "ios", "device_ids": tokens[:2], "data": alert, "flow_control": 1000}},
		// Valid-looking JSON a lax reader takes differently: the last "channels" wins there.
		{"/1.1/push", "duplicate key", json.RawMessage(`{"data":{"alert":"VIP only"},"channels":["vip"],"channels":[]}`)},
	} {
		status, b, err := c.call("POST", tc.path, true, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Code  int    `json:"code"`
			Error string `json:"error"`
		}
		if status != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || e.Error == "" ||
			!strings.Contains(e.Error, strings.TrimSpace(tc.param)) {
			t.Errorf("POST %s with %q: %d %s, want 400 {code, error} naming it", tc.path, tc.param, status, b)
		}
	}

	// The correct push: its record is the only one, and only its deliveries reach the simulator.
	oid := c.push(t, map[string]any{"data": alert, "channels": []string{"news"}})
	rec := c.waitDone(t, oid)
	if rec.Devices != n || rec.Successes != n {
		t.Errorf("record %+v: want devices = successes = %d", rec, n)
	}
	status, b, err := c.call("GET", "/1.1/notifications", true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("list records: %d %s: %v", status, b, err)
	}
	var list struct {
		Results []struct {
			ObjectID string `json:"objectId"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Results) != 1 || list.Results[0].ObjectID != oid {
		t.Errorf("records %s: want only the correct push's %s", b, oid)
	}
	st := s.stats.mustGet(t, true)
	short, dups, strangers := deliveries(st.PerToken, tokens, 1)
	if st.Accepted != n || len(short) > 0 || dups > 0 || len(strangers) > 0 {
		t.Errorf("simulator accepted %d (short %d, duplicates %d, strangers %d): want exactly one push to each of the %d devices",
			st.Accepted, len(short), dups, len(strangers), n)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
