package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store/pebble"
)

// ownRecord is what the own-channel tests read of a push record.
type ownRecord struct {
	Status      string   `json:"status"`
	Devices     int64    `json:"devices"`
	Successes   int64    `json:"successes"`
	LCSuccesses int64    `json:"lcSuccesses"`
	Arrivals    int64    `json:"arrivals"`
	Failures    int64    `json:"failures"`
	Expired     int64    `json:"expired"`
	Errors      []string `json:"errors"`
}

func (c *client) ownRecord(t *testing.T, oid string) ownRecord {
	t.Helper()
	status, b, err := c.call("GET", "/1.1/tables/Notifications/"+oid, true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("record %s: %d %s: %v", oid, status, b, err)
	}
	var r ownRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// prepareOwnApp creates an app with no gateway credentials at all, before any pushd runs: the
// own channel needs none.
func prepareOwnApp(t *testing.T, data string) *client {
	t.Helper()
	app := api.NewApp("e2e-own", push.DefaultSettings(), time.Now())
	st, err := pebble.Open(filepath.Join(data, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateApp(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return newClient("", app.ID, app.AppKey, app.MasterKey)
}

func (c *client) dialDevice(t *testing.T, iid string, ledger *sim.Ledger) *sim.Device {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	d, _, err := sim.DialDevice(ctx, sim.DeviceConfig{API: c.base, AppID: c.appID, AppKey: c.key, InstallationID: iid, Ledger: ledger})
	if err != nil {
		t.Fatalf("device %s: %v", iid, err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestE2EOwnChannelKillMidPushLosesNothing: Android installations without a vendor receive a
// push on the own channel, through the router and the gateway role of the real binary, with
// pushd killed (SIGKILL) after the gateway cached some of the messages and before it committed
// them. After the restart every device, online during the push or connecting only later,
// receives the message and acks it, and the record counts each device once: sent and arrived.
func TestE2EOwnChannelKillMidPushLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		online  = 4
		offline = 4
		point   = "direct/after-cache"
	)
	data := t.TempDir()
	c := prepareOwnApp(t, data)
	// Killed at the 3rd message cached: some messages cached, at least one uncommitted, others
	// not yet consumed.
	p := startArmed(t, data, fmt.Sprintf("%s@3", point))
	c.base = p.base
	iids := make([]string, online+offline)
	ledgers := make([]*sim.Ledger, len(iids))
	for i := range iids {
		iids[i] = fmt.Sprintf("e2e-own-%02d", i)
		ledgers[i] = sim.NewLedger()
		c.createInstallation(t, map[string]any{"deviceType": "android", "installationId": iids[i]})
	}
	devices := make([]*sim.Device, online)
	for i := range online {
		devices[i] = c.dialDevice(t, iids[i], ledgers[i])
	}
	// The Android payload of the spec: alert, title, silent, action, _notificationChannel, custom
	// attributes, and the android object over them; iOS-only keys dropped.
	payload := map[string]any{"alert": "own channel", "title": "Deals", "badge": 3, "sound": "ding", "plan": "gold",
		"_notificationChannel": "offers", "android": map[string]any{"action": "com.example.OPEN", "silent": false, "title": "Android deals"}}
	const wantData = `{"_notificationChannel":"offers","action":"com.example.OPEN","alert":"own channel","plan":"gold","silent":false,"title":"Android deals"}`
	oid := c.push(t, map[string]any{"where": map[string]any{"deviceType": "android"}, "data": payload})
	p.waitOutput(regexp.MustCompile(`faultpoint `+regexp.QuoteMeta(point)+` reached`), pushTimeout)
	p.kill()
	for _, d := range devices {
		<-d.Done() // the killed process took its connections with it
	}
	before := 0
	for i := range online {
		before += ledgers[i].Times(oid)
	}
	t.Logf("killed at the 3rd cached message; %d of %d online devices had the push", before, online)

	p = startPushd(t, data)
	c.base = p.base
	for i := range iids { // everyone (re)connects through the restarted router
		c.dialDevice(t, iids[i], ledgers[i])
	}
	waitfor.True(t, pushTimeout, "every device to receive the push", func() bool {
		for _, l := range ledgers {
			if l.Times(oid) == 0 || !l.Acked(oid) {
				return false
			}
		}
		return true
	})
	var rec ownRecord
	waitfor.True(t, pushTimeout, "every arrival counted", func() bool {
		rec = c.ownRecord(t, oid)
		return rec.Status == push.StatusDone && rec.Arrivals == int64(len(iids))
	})
	n := int64(len(iids))
	if rec.Devices != n || rec.Successes != n || rec.LCSuccesses != n || rec.Arrivals != n || rec.Failures != 0 || rec.Expired != 0 || len(rec.Errors) != 0 {
		t.Errorf("record %+v: want devices = successes = lcSuccesses = arrivals = %d", rec, n)
	}
	for i, l := range ledgers {
		if got := string(l.Data(oid)); got != wantData {
			t.Errorf("device %s got data %s, want %s", iids[i], got, wantData)
		}
	}
	dups := 0
	for i, l := range ledgers {
		if k := l.Times(oid); k > 1 {
			dups += k - 1
			t.Logf("device %s got the push %d times", iids[i], k)
		}
	}
	t.Logf("%d devices, 0 lost, %d duplicate frames (a device dedups by message id)", n, dups)
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}

// TestE2EOwnChannelMixedPushOfflineDevices: one push to iOS devices (APNs simulator) and
// own-channel Android devices, 20% of them offline until the push is done. Every iOS token is
// accepted once; every Android device gets the message exactly once (live, or from its offline
// cache when it connects) and acks it; the record's counts and arrivals are exact.
func TestE2EOwnChannelMixedPushOfflineDevices(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	const (
		nIOS     = 40
		nAndroid = 50
		offline  = nAndroid / 5
	)
	s := startPushsim(t)
	data := t.TempDir()
	c, tokens := prepareData(t, data, s, push.DefaultSettings(), nIOS, "mix")
	p := startPushd(t, data, "--apns-endpoint", s.apnsURL, "--gateway-ca", filepath.Join(s.dir, "ca.pem"))
	c.base = p.base
	ledgers := make([]*sim.Ledger, nAndroid)
	iids := make([]string, nAndroid)
	for i := range iids {
		iids[i] = fmt.Sprintf("e2e-mix-%02d", i)
		ledgers[i] = sim.NewLedger()
		c.createInstallation(t, map[string]any{"deviceType": "android", "installationId": iids[i], "channels": []string{"mix"}})
		if i >= offline {
			c.dialDevice(t, iids[i], ledgers[i])
		}
	}
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "mixed"}, "channels": []string{"mix"}})
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
		c.dialDevice(t, iids[i], ledgers[i])
	}
	var rec ownRecord
	waitfor.True(t, pushTimeout, "every arrival counted", func() bool {
		rec = c.ownRecord(t, oid)
		return rec.Arrivals == nAndroid
	})
	for i, l := range ledgers {
		if k := l.Times(oid); k != 1 {
			t.Errorf("device %s got the push %d times, want exactly once", iids[i], k)
		}
	}
	st := s.stats.mustGet(t, true)
	short, dups, strangers := deliveries(st.PerToken, tokens, 1)
	if len(short) > 0 || dups > 0 || len(strangers) > 0 {
		t.Errorf("APNs simulator: %d tokens short, %d duplicates, %d strangers", len(short), dups, len(strangers))
	}
	full, _, err := c.record(oid)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(nIOS + nAndroid)
	if rec.Devices != n || rec.Successes != n || rec.LCSuccesses != nAndroid || full.IOSSuccesses != nIOS || rec.Failures != 0 || len(rec.Errors) != 0 {
		t.Errorf("record %+v (iosSuccesses %d): want devices = successes = %d, lcSuccesses = arrivals = %d, iosSuccesses %d",
			rec, full.IOSSuccesses, n, nAndroid, nIOS)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
