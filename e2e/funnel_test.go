package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// funnelRecord is what the funnel test reads of a push record.
type funnelRecord struct {
	Status  string `json:"status"`
	Pending int64  `json:"pending"`
	Counts  struct {
		ByChannel    map[string]push.Funnel `json:"byChannel"`
		ByDeviceType map[string]push.Funnel `json:"byDeviceType"`
	} `json:"counts"`
}

func (c *client) funnel(t *testing.T, oid string) funnelRecord {
	t.Helper()
	status, b, err := c.call("GET", "/1.1/tables/Notifications/"+oid, true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("record %s: %d %s: %v", oid, status, b, err)
	}
	var r funnelRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// funnelProblems lists what breaks the funnel's invariant in f (of channel ch), and what went
// backwards since prev (the same channel at the previous reading).
func funnelProblems(ch string, f, prev push.Funnel) []string {
	var out []string
	if f.Targets != f.Sent+f.Failed+f.Expired+f.Deferred+f.Pending {
		out = append(out, fmt.Sprintf("%s: targets %d != sent %d + failed %d + expired %d + deferred %d + pending %d",
			ch, f.Targets, f.Sent, f.Failed, f.Expired, f.Deferred, f.Pending))
	}
	if f.Pending < 0 || f.Arrived > f.Sent || f.Arrived != f.Arrivals || f.InvalidTokens != f.FailedBy[push.FailInvalidToken] {
		out = append(out, fmt.Sprintf("%s: %+v", ch, f))
	}
	sum := int64(0)
	for _, v := range f.FailedBy {
		sum += v
	}
	if sum != f.Failed {
		out = append(out, fmt.Sprintf("%s: failedBy %v does not sum to failed %d", ch, f.FailedBy, f.Failed))
	}
	if f.Targets < prev.Targets || f.Sent < prev.Sent || f.Arrived < prev.Arrived || f.Failed < prev.Failed || f.Expired < prev.Expired {
		out = append(out, fmt.Sprintf("%s went backwards: %+v after %+v", ch, f, prev))
	}
	return out
}

// The funnel of a mixed push, through the real binary and its gateway simulators (`pushd
// serve --dev --sim`): APNs devices; own-channel devices, three connected (acking) and two
// offline (cached: sent, never arrived); HMS devices, two live, one with a dead token and one
// whose profile the app lacks; Meizu devices behind a simulator outage that lasts past the
// push's expiry. Read again and again while the push runs, every channel's funnel holds
// targets = sent + failed + expired + deferred + pending, with failedBy summing to failed and
// no count going backwards; at the end nothing is pending and each channel's figures are
// exact: the Meizu targets expired, the own channel's sent five and arrived three.
func TestE2EFunnelOfAMixedPush(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	data := t.TempDir()
	d := startDevSim(t, data)
	c, mzSim := d.c, d.sim(t, push.ChannelMz)
	n := 0
	create := func(inst map[string]any) string {
		t.Helper()
		n++
		iid := fmt.Sprintf("f0f0f0f0-0000-4000-8000-%012d", n)
		inst["installationId"], inst["channels"] = iid, []string{"funnel"}
		if inst["deviceType"] == nil {
			inst["deviceType"] = "android"
		}
		status, body, err := c.call("POST", "/1.1/installations", false, inst)
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create installation %v: %d %s: %v", inst, status, body, err)
		}
		return iid
	}
	for i := range 2 {
		create(map[string]any{"deviceType": "ios", "deviceToken": fmt.Sprintf("f0f0f0f04e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f%d", i), "apnsTopic": "com.example.pushd"})
	}
	var ledgers []*sim.Ledger
	for range 3 {
		l := sim.NewLedger()
		c.dialDevice(t, create(map[string]any{}), l)
		ledgers = append(ledgers, l)
	}
	for range 2 {
		create(map[string]any{}) // offline: cached
	}
	create(map[string]any{"vendor": "hms", "registrationId": "IQAAAACy0funnelA"})
	create(map[string]any{"vendor": "hms", "registrationId": "IQAAAACy0funnelB"})
	create(map[string]any{"vendor": "hms", "registrationId": `dead"funnel`})
	create(map[string]any{"vendor": "hms", "registrationId": "IQAAAACy0funnelC", "deviceProfile": "beta"})
	create(map[string]any{"vendor": "mz", "registrationId": "RFAKEfunnelA"})
	create(map[string]any{"vendor": "mz", "registrationId": "RFAKEfunnelB"})
	// Meizu is down for longer than the push lives: its targets can only expire.
	mzSim.startOutage(t, `[{"mode":"drop","for":"10m"}]`)

	const expiry = 8 // seconds: long enough for every other channel on a busy machine
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "Funnel", "title": "F"}, "channels": []string{"funnel"}, "expiration_interval": expiry})
	prev := map[string]push.Funnel{}
	readings, during := 0, 0
	var last funnelRecord
	var lastRead time.Time
	waitfor.True(t, pushTimeout, "the push to end with nothing pending and every arrival counted", func() bool {
		if time.Since(lastRead) < 50*time.Millisecond {
			return false // read the record some twenty times a second, not at every poll
		}
		lastRead = time.Now()
		r := c.funnel(t, oid)
		readings++
		if r.Status != push.StatusDone {
			during++
		}
		total := int64(0)
		for ch, f := range r.Counts.ByChannel {
			for _, p := range funnelProblems(ch, f, prev[ch]) {
				t.Errorf("reading %d (status %s): %s", readings, r.Status, p)
			}
			prev[ch] = f
			total += f.Pending
		}
		for dt, f := range r.Counts.ByDeviceType {
			if f.Targets != f.Sent+f.Failed+f.Expired+f.Deferred+f.Pending {
				t.Errorf("reading %d: device type %s: %+v", readings, dt, f)
			}
		}
		if r.Pending != total {
			t.Errorf("reading %d: pending %d, the channels' sum %d", readings, r.Pending, total)
		}
		last = r
		return r.Status == push.StatusDone && r.Pending == 0 && r.Counts.ByChannel[push.ChannelDirect].Arrived == 3
	})
	if during < 2 {
		t.Errorf("read the funnel %d times while the push ran, want several", during)
	}
	want := map[string]push.Funnel{
		push.ChannelAPNs:   {Targets: 2, Sent: 2, FailedBy: map[string]int64{}},
		push.ChannelDirect: {Targets: 5, Sent: 5, Arrived: 3, Arrivals: 3, FailedBy: map[string]int64{}},
		push.ChannelHMS: {Targets: 4, Sent: 2, Failed: 2, InvalidTokens: 1,
			FailedBy: map[string]int64{push.FailInvalidToken: 1, push.FailConfig: 1}},
		push.ChannelMz: {Targets: 2, Expired: 2, FailedBy: map[string]int64{}},
	}
	if !reflect.DeepEqual(last.Counts.ByChannel, want) {
		t.Errorf("final funnel by channel:\n got %+v\nwant %+v", last.Counts.ByChannel, want)
	}
	for i, l := range ledgers {
		if len(l.Shown()) != 1 || l.WireDuplicates() != 0 {
			t.Errorf("device %d: shown %q with %d wire duplicates, want the push once", i, l.Shown(), l.WireDuplicates())
		}
	}
}
