package e2e

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// TestE2ELCKillMidPushLosesNothing: as TestE2EOwnChannelKillMidPushLosesNothing, with devices
// on both protocols: pushd is killed (SIGKILL) after the gateway cached some of the messages
// and before it committed them; after the restart every device, online during the push or
// connecting only later, on our protocol or the original's, receives the message and acks it,
// and the record counts each device once, sent and arrived.
func TestE2ELCKillMidPushLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		n      = 8
		online = 4
		point  = "direct/after-cache"
	)
	data := t.TempDir()
	c := prepareOwnApp(t, data)
	p := startArmed(t, data, fmt.Sprintf("%s@3", point))
	c.base = p.base
	iids := make([]string, n)
	ledgers := make([]*sim.Ledger, n)
	lc := func(i int) bool { return i%2 == 1 }
	var done []<-chan struct{}
	dial := func(i int) {
		if lc(i) {
			done = append(done, c.dialLCDevice(t, iids[i], ledgers[i]).Done())
		} else {
			done = append(done, c.dialDevice(t, iids[i], ledgers[i]).Done())
		}
	}
	for i := range iids {
		iids[i] = fmt.Sprintf("e2e-lckill-%02d", i)
		ledgers[i] = sim.NewLedger()
		c.createInstallation(t, map[string]any{"deviceType": "android", "installationId": iids[i]})
		if i < online {
			dial(i)
		}
	}
	oid := c.push(t, map[string]any{"where": map[string]any{"deviceType": "android"}, "data": map[string]any{"alert": "survives a kill"}, "notification_id": "lckill1"})
	p.waitOutput(regexp.MustCompile(`faultpoint `+regexp.QuoteMeta(point)+` reached`), pushTimeout)
	p.kill()
	for _, d := range done {
		<-d // the killed process took its connections with it
	}
	p = startPushd(t, data)
	c.base = p.base
	for i := range iids {
		dial(i)
	}
	waitfor.True(t, pushTimeout, "every device to receive and ack the push", func() bool {
		for _, l := range ledgers {
			if !l.Acked(oid) {
				return false
			}
		}
		return true
	})
	var rec ownRecord
	waitfor.True(t, pushTimeout, "every arrival counted", func() bool {
		rec = c.ownRecord(t, oid)
		return rec.Status == push.StatusDone && rec.Arrivals == n
	})
	if rec.Devices != n || rec.Successes != n || rec.LCSuccesses != n || rec.Arrivals != n || rec.Failures != 0 || len(rec.Errors) != 0 {
		t.Errorf("record %+v: want devices = successes = lcSuccesses = arrivals = %d", rec, n)
	}
	for i, l := range ledgers {
		want := `{"alert":"survives a kill"}`
		if lc(i) { // the original's data command carries the notification id in the JSON
			want = `{"_nid":"lckill1","alert":"survives a kill"}`
		}
		if got := string(l.Data(oid)); got != want {
			t.Errorf("device %s (original's protocol: %v) got data %s", iids[i], lc(i), got)
		}
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
