package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
)

type presenceAnswer struct {
	InstallationID string  `json:"installationId"`
	Connected      bool    `json:"connected"`
	Node           *string `json:"node"`
	ConnectedAt    *string `json:"connectedAt"`
	LastSeenAt     *string `json:"lastSeenAt"`
	LastAckAt      *string `json:"lastAckAt"`
}

func (c *client) presence(t *testing.T, oid string) presenceAnswer {
	t.Helper()
	status, b, err := c.call("GET", "/1.1/installations/"+oid+"/presence", true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("presence of %s: %d %s: %v", oid, status, b, err)
	}
	var p presenceAnswer
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func parseAPITime(t *testing.T, s *string) time.Time {
	t.Helper()
	if s == nil {
		t.Fatal("time is null")
	}
	v, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The presence endpoint of the real binary across a device's life: never connected (nothing
// known), connected (the node, seen now), after an ack (last ack), after the disconnect (not
// connected, last seen at the disconnect); an app key is refused, an unknown id is 404.
func TestE2EPresence(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	data := t.TempDir()
	ds := startDevSim(t, data)
	p, c := ds.pushd, ds.c
	const iid = "c0c0c0c0-0000-4000-8000-000000000001"
	oid := c.createInstallation(t, map[string]any{"deviceType": "android", "installationId": iid, "channels": []string{"pres"}})

	if a := c.presence(t, oid); a.Connected || a.Node != nil || a.LastSeenAt != nil || a.LastAckAt != nil || a.InstallationID != iid {
		t.Errorf("never connected: %+v, want nothing known", a)
	}
	if status, body, _ := c.call("GET", "/1.1/installations/"+oid+"/presence", false, nil); status == http.StatusOK {
		t.Errorf("presence with the app key: %d %s, want a refusal", status, body)
	}
	if status, _, _ := c.call("GET", "/1.1/installations/nosuchobject/presence", true, nil); status != http.StatusNotFound {
		t.Errorf("presence of an unknown installation: %d, want 404", status)
	}

	before := time.Now().Add(-time.Second)
	ledger := sim.NewLedger()
	d := c.dialDevice(t, iid, ledger)
	var a presenceAnswer
	waitfor.True(t, pushTimeout, "the device connected", func() bool { a = c.presence(t, oid); return a.Connected })
	if a.Node == nil || *a.Node == "" || a.ConnectedAt == nil || a.LastAckAt != nil {
		t.Errorf("connected: %+v, want a node, connectedAt, no ack yet", a)
	}
	if at := parseAPITime(t, a.ConnectedAt); at.Before(before) {
		t.Errorf("connectedAt %v before the connect (%v)", at, before)
	}

	push := c.push(t, map[string]any{"data": map[string]any{"alert": "presence"}, "channels": []string{"pres"}})
	waitfor.True(t, pushTimeout, "the device to ack", func() bool { return ledger.Acked(push) })
	waitfor.True(t, pushTimeout, "the ack recorded", func() bool { a = c.presence(t, oid); return a.LastAckAt != nil })
	if !a.Connected || parseAPITime(t, a.LastAckAt).Before(before) {
		t.Errorf("after the ack: %+v", a)
	}

	d.Close()
	waitfor.True(t, pushTimeout, "the device disconnected", func() bool { a = c.presence(t, oid); return !a.Connected })
	if a.Node != nil || a.LastSeenAt == nil || a.LastAckAt == nil || parseAPITime(t, a.LastSeenAt).Before(parseAPITime(t, a.LastAckAt)) {
		t.Errorf("after the disconnect: %+v, want no node, last seen at or after the last ack", a)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
