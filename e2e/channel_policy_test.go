package e2e

import (
	"net/http"
	"testing"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// Under own_first, through `pushd serve --dev --sim`: a hybrid (HMS) installation connected to
// the own channel gets the push there (the HMS simulator sees nothing of it), a disconnected
// one on HMS; a push with channel_policy own_only reaches the disconnected device on the own
// channel once it connects (cached) and never touches HMS. Each target is counted once, on
// the channel that carried it.
func TestE2EChannelPolicyOwnFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	t.Setenv("PUSHD_ADMIN_TOKEN", e2eAdminToken)
	data := t.TempDir()
	d := startDevSim(t, data)
	p, keys, c, hms := d.pushd, d.keys, d.c, d.sim(t, push.ChannelHMS)
	const (
		onIID, offIID = "b0b0b0b0-0000-4000-8000-000000000001", "b0b0b0b0-0000-4000-8000-000000000002"
		onTok, offTok = "IQAAAACy0policyOn", "IQAAAACy0policyOff"
	)
	for _, inst := range []map[string]any{
		{"deviceType": "android", "installationId": onIID, "vendor": "HMS", "registrationId": onTok, "channels": []string{"pol"}},
		{"deviceType": "android", "installationId": offIID, "vendor": "HMS", "registrationId": offTok, "channels": []string{"pol"}},
	} {
		c.createInstallation(t, inst)
	}
	setAppPolicy(t, p.base, keys.AppID, "own_first")
	onLedger, offLedger := sim.NewLedger(), sim.NewLedger()
	c.dialDevice(t, onIID, onLedger)

	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "own first"}, "channels": []string{"pol"}})
	c.waitDone(t, oid)
	waitfor.True(t, pushTimeout, "the connected hybrid device to ack", func() bool { return onLedger.Acked(oid) })
	var rec ownRecord
	waitfor.True(t, pushTimeout, "the own channel's arrival counted", func() bool {
		rec = c.ownRecord(t, oid)
		return rec.Arrivals == 1
	})
	st := hms.mustGet(t, true)
	if st.PerToken[onTok] != 0 || st.PerToken[offTok] != 1 {
		t.Errorf("HMS simulator per token %v: want 0 for the connected device, 1 for the disconnected one", st.PerToken)
	}
	if rec.Devices != 2 || rec.Successes != 2 || rec.LCSuccesses != 1 || rec.Failures != 0 {
		t.Errorf("record %+v: want devices 2, successes 2 (1 own channel, 1 HMS), failures 0", rec)
	}

	own := c.push(t, map[string]any{"data": map[string]any{"alert": "own only"}, "channels": []string{"pol"}, "channel_policy": "own_only"})
	c.waitDone(t, own)
	c.dialDevice(t, offIID, offLedger)
	waitfor.True(t, pushTimeout, "both devices to ack the own_only push", func() bool { return onLedger.Acked(own) && offLedger.Acked(own) })
	if st := hms.mustGet(t, true); st.PerToken[onTok] != 0 || st.PerToken[offTok] != 1 {
		t.Errorf("HMS simulator per token %v after own_only: want it untouched", st.PerToken)
	}
	waitfor.True(t, pushTimeout, "the own_only record", func() bool {
		rec = c.ownRecord(t, own)
		return rec.Arrivals == 2
	})
	if rec.Devices != 2 || rec.LCSuccesses != 2 {
		t.Errorf("own_only record %+v: want devices 2, lcSuccesses 2", rec)
	}
	if status, body, _ := c.call("POST", "/1.1/push", true, map[string]any{"data": map[string]any{"alert": "x"}, "channel_policy": "own_last"}); status != http.StatusBadRequest {
		t.Errorf("channel_policy own_last: %d %s, want 400", status, body)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
