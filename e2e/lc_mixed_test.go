package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

func (c *client) dialLCDevice(t *testing.T, iid string, ledger *sim.Ledger) *sim.LCDevice {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	d, err := sim.DialLCDevice(ctx, sim.LCDeviceConfig{DeviceConfig: sim.DeviceConfig{API: c.base, AppID: c.appID, InstallationID: iid, Ledger: ledger}})
	if err != nil {
		t.Fatalf("device %s (original's protocol): %v", iid, err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestE2ELCMixedProtocols: one push to own-channel Android devices, half on our protocol and
// half on the original's, a fifth of each offline until the push is done. Every device gets
// the message exactly once (live, or from its offline cache at connect) and acks it; the
// record counts each device once, sent and arrived, whichever protocol it speaks.
func TestE2ELCMixedProtocols(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		n       = 40
		offline = n / 5
	)
	data := t.TempDir()
	c := prepareOwnApp(t, data)
	p := startPushd(t, data)
	c.base = p.base
	iids := make([]string, n)
	ledgers := make([]*sim.Ledger, n)
	lc := func(i int) bool { return i%2 == 1 }
	dial := func(i int) {
		if lc(i) {
			c.dialLCDevice(t, iids[i], ledgers[i])
		} else {
			c.dialDevice(t, iids[i], ledgers[i])
		}
	}
	for i := range iids {
		iids[i] = fmt.Sprintf("e2e-lcmix-%02d", i)
		ledgers[i] = sim.NewLedger()
		c.createInstallation(t, map[string]any{"deviceType": "android", "installationId": iids[i], "channels": []string{"mix"}})
		if i >= offline {
			dial(i)
		}
	}
	const wantData = `{"alert":"both protocols","title":"Mixed"}`
	oid := c.push(t, map[string]any{"channels": []string{"mix"}, "data": map[string]any{"alert": "both protocols", "title": "Mixed", "badge": 2}, "notification_id": "lcmix1"})
	c.waitDone(t, oid)
	waitfor.True(t, pushTimeout, "the online devices to receive and ack", func() bool {
		for _, l := range ledgers[offline:] {
			if !l.Acked(oid) {
				return false
			}
		}
		return true
	})
	for i := range offline {
		if ledgers[i].Times(oid) != 0 {
			t.Fatalf("offline device %s got the push", iids[i])
		}
		dial(i)
	}
	var rec ownRecord
	// A device's ledger marks its ack once the ack's write returns, which may be after pushd
	// counted the arrival: wait for both.
	waitfor.True(t, pushTimeout, "every arrival counted, and acked in the devices' ledgers", func() bool {
		for _, l := range ledgers {
			if !l.Acked(oid) {
				return false
			}
		}
		rec = c.ownRecord(t, oid)
		return rec.Arrivals == n
	})
	for i, l := range ledgers {
		if k := l.Times(oid); k != 1 || !l.Acked(oid) {
			t.Errorf("device %s (original's protocol: %v) got the push %d times, acked %v; want once, acked", iids[i], lc(i), k, l.Acked(oid))
		}
		want := wantData
		if lc(i) { // the original's data command carries the notification id in the JSON
			want = `{"_nid":"lcmix1",` + wantData[1:]
		}
		if got := string(l.Data(oid)); got != want {
			t.Errorf("device %s (original's protocol: %v) got data %s, want %s", iids[i], lc(i), got, want)
		}
	}
	if rec.Status != push.StatusDone || rec.Devices != n || rec.Successes != n || rec.LCSuccesses != n || rec.Arrivals != n || rec.Failures != 0 || len(rec.Errors) != 0 {
		t.Errorf("record %+v: want devices = successes = lcSuccesses = arrivals = %d", rec, n)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
