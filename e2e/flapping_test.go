package e2e

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/loadtest/webhooksink"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// The flapping scenario (issue 20, "Done when" 1) on the real binary: Android devices, half
// of them hybrid across the six vendors, every one also holding an own-channel connection
// that drops and comes back on a random schedule, receive a series of own_first pushes. The
// schedule runs on an injected clock: a seeded random plan of rounds, each round's drops and
// reconnects racing that round's push (no wall-clock timer decides anything). Size:
// PUSHD_FLAP_DEVICES (default 60 here; `make loadtest-flap` runs 10,000), rounds
// PUSHD_FLAP_PUSHES (default 4).

// flapVendors are the six vendors the hybrid devices spread over (stored name → channel).
var flapVendors = []struct{ stored, channel string }{
	{"HMS", push.ChannelHMS}, {"honor", push.ChannelHonor}, {"mi", push.ChannelMi},
	{"meizu", push.ChannelMz}, {"vivo", push.ChannelVivo}, {"oppo", push.ChannelOppo},
}

// deviceLedger is what a device's own-channel ledger tells the check (*sim.Ledger).
type deviceLedger interface {
	Times(id string) int
	Acked(id string) bool
	NID(id string) string
}

// flapRatioDeliveries is the fewest deliveries over which wire duplicates must stay within 1%.
const flapRatioDeliveries = 10000

// flapDevice is one simulated device: its own-channel ledger (a *sim.Ledger in the scenario)
// survives its reconnects.
type flapDevice struct {
	iid, token, channel string // token, channel: its vendor's ("" for an own-channel-only device)
	ledger              deviceLedger
	mu                  sync.Mutex
	conn                *sim.Device
	connects            int // under mu
}

// flapLedgers is what the devices and the simulators saw, the truth a record is checked with.
type flapLedgers struct {
	devs []*flapDevice
	// vendor[pushID][token] lists, per copy a vendor simulator accepted for token while push
	// pushID fanned out, the notification id its request carried (sim.Sent.NotifyID; "" for
	// none): a vendor send happens only while its push fans out.
	vendor map[string]map[string][]string
}

// flapRecord is a push record as the REST API shows it: its notification id, its funnel per
// channel (counts.byChannel) and the pending targets over all channels.
type flapRecord struct {
	ObjectID       string `json:"objectId"`
	NotificationID string `json:"notificationId"`
	Status         string `json:"status"`
	Pending        int64  `json:"pending"`
	Counts         struct {
		ByChannel map[string]push.Funnel `json:"byChannel"`
	} `json:"counts"`
}

// flapShown is, per device, how a push reached it: its copies on the own channel (and whether
// it was acked) and from its vendor, and the notifications a device that joins its channels by
// notification id shows for them (one per distinct id).
type flapShown struct {
	own, vendor int64
	acked       bool
	shows       int
}

// vendorNID maps the notification id a vendor simulator recorded back to the push's
// notification id nid when it is vendor.NotifyID(nid) (Meizu's notifyKey: vendor.NotifyKey);
// another id, or none, is a notification of its own on the device, returned as such.
func vendorNID(channel, recorded, nid string) string {
	want := strconv.FormatInt(vendor.NotifyID(nid), 10)
	if channel == push.ChannelMz {
		want = vendor.NotifyKey(nid)
	}
	if nid != "" && recorded == want {
		return nid
	}
	return "vendor id " + strconv.Quote(recorded)
}

// shown joins each device's copies of push pushID (notification id nid) across its channels
// by notification id: the own channel's frames by the nid they carried (their message id when
// none), its vendor's copies by their notify id mapped back through vendor.NotifyID.
func (l *flapLedgers) shown(pushID, nid string) []flapShown {
	out := make([]flapShown, len(l.devs))
	for i, d := range l.devs {
		s := flapShown{own: int64(d.ledger.Times(pushID)), acked: d.ledger.Acked(pushID)}
		shows := map[string]bool{}
		if s.own > 0 {
			shows[cmp.Or(d.ledger.NID(pushID), pushID)] = true
		}
		if d.token != "" {
			for _, id := range l.vendor[pushID][d.token] {
				s.vendor++
				shows[vendorNID(d.channel, id, nid)] = true
			}
		}
		s.shows = len(shows)
		out[i] = s
	}
	return out
}

// flapCheck compares one push record with the ledgers and the webhook ledger; it returns
// every difference (none: the record's funnel is exact) and the wire duplicates. A device's
// copies are joined by notification id (flapLedgers.shown): a device none reached is lost,
// one shown two different notifications for the push was shown twice, and every copy past
// the first of one notification is a wire duplicate (own + vendor of one id included). The
// record's funnel must add up per channel (targets = sent + failed + expired + deferred +
// pending, failedBy summing to failed, nothing pending once the push is done) and equal the
// ledgers': sent per channel as the devices and simulators saw it, arrived on the own channel
// the acked deliveries, nothing failed, expired or deferred; the webhook ledger's events of
// the push equal the record's sums.
func flapCheck(rec flapRecord, l *flapLedgers, wh webhooksink.Ledger) (diffs []string, wireDups int64) {
	want := map[string]*push.Funnel{}
	at := func(ch string) *push.Funnel {
		if want[ch] == nil {
			want[ch] = &push.Funnel{}
		}
		return want[ch]
	}
	for i, s := range l.shown(rec.ObjectID, rec.NotificationID) {
		d := l.devs[i]
		switch {
		case s.own == 0 && s.vendor == 0:
			diffs = append(diffs, fmt.Sprintf("device %s: lost", d.iid))
		case s.shows > 1:
			diffs = append(diffs, fmt.Sprintf("device %s: shown twice (%d notifications for push %s: own channel nid %q, %s ids %q)",
				d.iid, s.shows, rec.ObjectID, d.ledger.NID(rec.ObjectID), d.channel, l.vendor[rec.ObjectID][d.token]))
		}
		wireDups += s.own + s.vendor - int64(s.shows)
		if s.own > 0 {
			f := at(push.ChannelDirect)
			f.Targets++
			f.Sent++
			if s.acked {
				f.Arrived++
				f.Arrivals++
			}
		}
		if s.vendor > 0 {
			f := at(d.channel)
			f.Targets++
			f.Sent++
		}
	}
	var total push.Funnel
	var pending int64
	for ch, got := range rec.Counts.ByChannel {
		var failedBy int64
		for _, k := range got.FailedBy {
			failedBy += k
		}
		if sum := got.Sent + got.Failed + got.Expired + got.Deferred + got.Pending; got.Targets != sum {
			diffs = append(diffs, fmt.Sprintf("push %s channel %s: funnel targets %d, sent+failed+expired+deferred+pending %d", rec.ObjectID, ch, got.Targets, sum))
		}
		if failedBy != got.Failed {
			diffs = append(diffs, fmt.Sprintf("push %s channel %s: failedBy %v sums to %d, failed %d", rec.ObjectID, ch, got.FailedBy, failedBy, got.Failed))
		}
		if rec.Status == push.StatusDone && got.Pending != 0 {
			diffs = append(diffs, fmt.Sprintf("push %s channel %s: done with %d pending", rec.ObjectID, ch, got.Pending))
		}
		pending += got.Pending
		total.Sent += got.Sent
		total.Arrived += got.Arrived
		total.Failed += got.Failed
		total.Expired += got.Expired
		if got.Targets == 0 && want[ch] == nil {
			continue
		}
		w := want[ch]
		if w == nil {
			w = &push.Funnel{}
		}
		if ch == push.ChannelDirect && got.Arrived != w.Arrived {
			diffs = append(diffs, fmt.Sprintf("push %s: arrived %d on the own channel, %d acked in the device ledgers", rec.ObjectID, got.Arrived, w.Arrived))
		}
		g := got
		g.FailedBy = nil // summed above; the ledgers know no failure, so failed is 0
		if !reflect.DeepEqual(g, *w) {
			diffs = append(diffs, fmt.Sprintf("push %s channel %s: record %+v, ledgers %+v", rec.ObjectID, ch, got, *w))
		}
	}
	if rec.Pending != pending {
		diffs = append(diffs, fmt.Sprintf("push %s: pending %d, its channels' %d", rec.ObjectID, rec.Pending, pending))
	}
	for ch, w := range want {
		if _, ok := rec.Counts.ByChannel[ch]; !ok {
			diffs = append(diffs, fmt.Sprintf("push %s channel %s: not in the record, ledgers %+v", rec.ObjectID, ch, *w))
		}
	}
	ev := wh.ByPush[rec.ObjectID]
	if int64(ev["sent"]) != total.Sent || int64(ev["arrived"]) != total.Arrived || int64(ev["failed"]) != total.Failed || int64(ev["expired"]) != total.Expired {
		diffs = append(diffs, fmt.Sprintf("push %s: webhook ledger %v, record sent %d, arrived %d, failed %d, expired %d",
			rec.ObjectID, ev, total.Sent, total.Arrived, total.Failed, total.Expired))
	}
	return diffs, wireDups
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func TestE2EFlappingOwnFirst(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	n := envInt(t, "PUSHD_FLAP_DEVICES", 60)
	rounds := envInt(t, "PUSHD_FLAP_PUSHES", 4)
	timeout := pushTimeout + time.Duration(n)*20*time.Millisecond
	t.Setenv("PUSHD_ADMIN_TOKEN", e2eAdminToken)
	data := t.TempDir()
	p := startPushdSim(t, data, "--direct-connect-rate", "100000")
	line := p.waitOutput(regexp.MustCompile(`gateway simulators: .*`), startTimeout)
	sims := map[string]*simClient{}
	for ch, re := range map[string]*regexp.Regexp{push.ChannelHMS: hmsSimLine, push.ChannelHonor: honorSimLine, push.ChannelMi: miSimLine,
		push.ChannelMz: mzSimLine, push.ChannelVivo: vivoSimLine, push.ChannelOppo: oppoSimLine} {
		m := re.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("no %s simulator in the start-up line %q", ch, line)
		}
		sims[ch] = newSimClient(m[1], &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // loopback test simulator
	}
	b, err := os.ReadFile(filepath.Join(data, "dev-app.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys struct{ AppID, AppKey, MasterKey string }
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	c := newClient(p.base, keys.AppID, keys.AppKey, keys.MasterKey)

	// The webhook receiver, then the policy.
	const secret = "flapping-webhook-secret-0123"
	sink := webhooksink.New(secret)
	hs := httptest.NewServer(sink)
	t.Cleanup(hs.Close)
	adminPut(t, p.base, keys.AppID, map[string]any{"webhook": map[string]any{"url": hs.URL, "secret": secret}})
	setAppPolicy(t, p.base, keys.AppID, "own_first")

	// The devices: even ones own-channel only, odd ones hybrid over the six vendors.
	l := &flapLedgers{vendor: map[string]map[string][]string{}}
	for i := range n {
		d := &flapDevice{iid: fmt.Sprintf("f1a90000-0000-4000-8000-%012d", i), ledger: sim.NewLedger()}
		if i%2 == 1 {
			v := flapVendors[(i/2)%len(flapVendors)]
			d.token, d.channel = fmt.Sprintf("flapreg-%s-%07d", v.channel, i), v.channel
		}
		l.devs = append(l.devs, d)
	}
	var g errgroup.Group
	g.SetLimit(8)
	for i, d := range l.devs {
		g.Go(func() error {
			body := map[string]any{"deviceType": "android", "installationId": d.iid, "channels": []string{"flap"}}
			if d.token != "" {
				body["vendor"], body["registrationId"] = flapVendors[(i/2)%len(flapVendors)].stored, d.token
			}
			status, b, err := c.call("POST", "/1.1/installations", false, body)
			if err != nil || status/100 != 2 {
				return fmt.Errorf("create installation %s: %d %s: %v", d.iid, status, b, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var connects, drops atomic.Int64
	connect := func(d *flapDevice) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.conn != nil {
			return nil
		}
		connects.Add(1)
		d.connects++
		dctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		dev, _, err := sim.DialDevice(dctx, sim.DeviceConfig{API: c.base, AppID: c.appID, AppKey: c.key, InstallationID: d.iid, Ledger: d.ledger.(*sim.Ledger)})
		if err != nil {
			return fmt.Errorf("device %s: %w", d.iid, err)
		}
		d.conn = dev
		return nil
	}
	drop := func(d *flapDevice) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.conn != nil {
			d.conn.Close()
			d.conn = nil
			drops.Add(1)
		}
	}
	t.Cleanup(func() {
		for _, d := range l.devs {
			drop(d)
		}
	})
	// The injected clock: round r's plan says which devices are connected after it.
	rng := rand.New(rand.NewPCG(20, 26))
	plan := make([][]bool, rounds)
	for r := range plan {
		plan[r] = make([]bool, n)
		for i := range plan[r] {
			plan[r][i] = rng.Float64() < 0.6
		}
	}
	apply := func(up []bool) error {
		var g errgroup.Group
		g.SetLimit(32)
		for i, d := range l.devs {
			g.Go(func() error {
				if up[i] {
					return connect(d)
				}
				drop(d)
				return nil
			})
		}
		return g.Wait()
	}
	all := make([]bool, n)
	for i := range all {
		all[i] = rng.Float64() < 0.5 // the start: half connected
	}
	if err := apply(all); err != nil {
		t.Fatal(err)
	}
	// What the vendor simulators accepted since the last call, per token the notification id of
	// each copy; each simulator's per-token counts must agree (it recorded every request).
	vendorSent := func() map[string][]string {
		out := map[string][]string{}
		for ch, s := range sims {
			st := s.mustGet(t, true)
			recorded := map[string]int64{}
			for _, x := range s.simSent(t) {
				for _, tok := range strings.Split(x.Target, ",") {
					out[tok] = append(out[tok], x.NotifyID)
					recorded[tok]++
				}
			}
			if !maps.Equal(recorded, st.PerToken) {
				t.Fatalf("%s simulator: recorded copies %v, per-token counts %v (GET /_sent keeps too few)", ch, recorded, st.PerToken)
			}
			s.reset(t)
		}
		return out
	}
	var pushes []string
	for r := range rounds {
		oid := c.push(t, map[string]any{"data": map[string]any{"alert": "flap " + strconv.Itoa(r)}, "channels": []string{"flap"},
			"expiration_interval": 3600})
		// This round's drops and reconnects race the push's fan-out.
		flapped := make(chan error, 1)
		go func() { flapped <- apply(plan[r]) }()
		c.waitDone(t, oid)
		if err := <-flapped; err != nil {
			t.Fatal(err)
		}
		l.vendor[oid] = vendorSent()
		pushes = append(pushes, oid)
	}
	// Every device comes back: what the own channel cached reaches it.
	for i := range all {
		all[i] = true
	}
	if err := apply(all); err != nil {
		t.Fatal(err)
	}
	waitfor.True(t, timeout, "every push on every device, acked on the own channel", func() bool {
		for _, oid := range pushes {
			for _, s := range l.shown(oid, "") { // the copies only: no notification id needed
				if s.vendor == 0 && (s.own == 0 || !s.acked) {
					return false
				}
			}
		}
		return true
	})
	recs := map[string]flapRecord{}
	waitfor.True(t, timeout, "the records' arrivals and the webhook events settled", func() bool {
		wh := sink.Ledger()
		for _, oid := range pushes {
			var rec flapRecord
			status, b, err := c.call("GET", "/1.1/tables/Notifications/"+oid, true, nil)
			if err != nil || status != http.StatusOK || json.Unmarshal(b, &rec) != nil {
				return false
			}
			recs[oid] = rec
			if diffs, _ := flapCheck(rec, l, wh); len(diffs) > 0 {
				return false
			}
		}
		return true
	})
	var deliveries, dups, joined int64
	wh := sink.Ledger()
	byChannel := map[string]int64{}
	for _, oid := range pushes {
		diffs, d := flapCheck(recs[oid], l, wh)
		for _, s := range diffs {
			t.Error(s)
		}
		dups += d
		deliveries += int64(n)
		for i, s := range l.shown(oid, recs[oid].NotificationID) {
			if s.own > 0 && s.vendor > 0 {
				joined++ // reached on both channels, shown once by its notification id
			}
			// A wire duplicate is a copy flushed again by a reconnect before its ack: a device
			// cannot have more of them for one push than it had reconnects.
			dev := l.devs[i]
			dev.mu.Lock()
			re := max(dev.connects-1, 0)
			dev.mu.Unlock()
			if extra := s.own + s.vendor - int64(s.shows); extra > int64(re) {
				t.Errorf("device %s: %d wire duplicates of push %s, and only %d reconnects to explain them", dev.iid, extra, oid, re)
			}
		}
		for ch, c := range recs[oid].Counts.ByChannel {
			byChannel[ch] += c.Sent
		}
	}
	t.Logf("flapping: sent per channel over the pushes %v; %d connects, %d drops", byChannel, connects.Load(), drops.Load())
	t.Logf("flapping: %d devices (%d hybrid over %d vendors), %d pushes: %d deliveries, 0 lost, 0 shown twice, %d wire duplicates (%.3f%%; %d devices reached on own and vendor channel, joined by notification id); webhook %d events, %d duplicates, %d bad signatures",
		n, n/2, len(flapVendors), rounds, deliveries, dups, 100*float64(dups)/float64(deliveries), joined, wh.Events, wh.Duplicates, wh.BadSigs)
	// The bound is for the 10,000-device run (make loadtest-flap: 0.01-0.03%). The small
	// run of make test flaps 40% of 60 devices while each push fans out, and its 240 deliveries
	// gave 1-6 duplicates (up to 2.5%, as many before this check as after): there the
	// per-device bound above is the check.
	if deliveries >= flapRatioDeliveries && dups*100 > deliveries {
		t.Errorf("%d wire duplicates of %d deliveries: over 1%%", dups, deliveries)
	}
	if wh.BadSigs != 0 {
		t.Errorf("%d webhook requests with a bad signature", wh.BadSigs)
	}
}

// reset zeroes the simulator's counters and recorded requests (POST /_reset).
func (s *simClient) reset(t *testing.T) {
	t.Helper()
	res, err := s.c.Post(s.url+"/_reset", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("POST %s/_reset: %d", s.url, res.StatusCode)
	}
}
