package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// setupHybrid creates the hybrid app (China edition: the own channel and the vendors), gives
// it the APNs key and the vendor simulators' credentials pushsim wrote (sim.VendorsFile), and
// seeds its population.
func (r *run) setupHybrid(ctx context.Context, f simFiles) error {
	needQuota := slices.Contains(r.cfg.Pushes, ScenarioQuota)
	needVendors := slices.Contains(r.cfg.Pushes, ScenarioMixed) || needQuota
	var quota *sim.QuotaProfile
	if needQuota {
		b, err := os.ReadFile(filepath.Join(r.cfg.SimDir, sim.QuotaFile))
		if err != nil {
			return fmt.Errorf("cannot read the quota profile of the simulators (run pushsim with --vivo-quota-profile): %w", err)
		}
		quota = new(sim.QuotaProfile)
		if err := json.Unmarshal(b, quota); err != nil {
			return fmt.Errorf("cannot decode %s: %w", sim.QuotaFile, err)
		}
	}
	var vendors map[string]json.RawMessage
	if needVendors {
		b, err := os.ReadFile(filepath.Join(r.cfg.SimDir, sim.VendorsFile))
		if err != nil {
			return fmt.Errorf("cannot read the vendor simulators' credentials (run pushsim with --hms-addr, --honor-addr, --mi-addr, --vivo-addr, --oppo-addr and --mz-addr): %w", err)
		}
		if err := json.Unmarshal(b, &vendors); err != nil {
			return fmt.Errorf("cannot decode %s: %w", sim.VendorsFile, err)
		}
		for _, ch := range MixedChannels {
			if !slices.Contains(r.cfg.Pushes, ScenarioMixed) {
				break
			}
			if _, ok := vendors[ch]; !ok && ch != push.ChannelAPNs && ch != push.ChannelDirect {
				return fmt.Errorf("cannot run the mixed scenario: %s lacks the %s simulator's credentials", sim.VendorsFile, ch)
			}
		}
	}
	r.hybrid = newClient(r.api.base, r.cfg.Concurrency, r.cfg.RequestDeadline)
	r.hybrid.keys.adminToken = r.cfg.AdminToken
	body := map[string]any{"name": "loadtest-hybrid-" + r.id, "settings": map[string]any{
		"edition":        push.EditionChina, // the own channel and every vendor with a driver
		"callsPerMinute": push.MaxCallsPerMinute,
		"dailyVolume":    int64(1) << 40,
	}}
	var app struct {
		AppID     string `json:"appId"`
		AppKey    string `json:"appKey"`
		MasterKey string `json:"masterKey"`
	}
	if _, err := r.hybrid.do(ctx, http.MethodPost, "/admin/apps", authAdmin, body, &app); err != nil {
		return fmt.Errorf("cannot create the hybrid load-test app: %w", err)
	}
	if app.AppID == "" || app.AppKey == "" || app.MasterKey == "" {
		return errors.New("cannot create the hybrid load-test app: the answer lacks appId, appKey or masterKey")
	}
	r.hybrid.keys.appID, r.hybrid.keys.appKey, r.hybrid.keys.masterKey = app.AppID, app.AppKey, app.MasterKey
	r.rep.HybridAppID = app.AppID
	apns := map[string]any{
		"defaultTopic": r.cfg.Topic,
		"teams":        []map[string]string{{"teamId": r.cfg.APNsTeamID, "keyId": f.keyID, "p8": string(f.p8)}},
	}
	if _, err := r.hybrid.do(ctx, http.MethodPut, "/admin/apps/"+app.AppID+"/credentials/apns", authAdmin, apns, nil); err != nil {
		return fmt.Errorf("cannot upload the APNs credentials of app %s: %w", app.AppID, err)
	}
	var names []string
	for _, ch := range slices.Sorted(maps.Keys(vendors)) {
		if _, err := r.hybrid.do(ctx, http.MethodPut, "/admin/apps/"+app.AppID+"/credentials/"+ch, authAdmin, []byte(vendors[ch]), nil); err != nil {
			return fmt.Errorf("cannot upload the %s credentials of app %s: %w", ch, app.AppID, err)
		}
		names = append(names, ch)
	}
	r.logf("hybrid app %s (china edition) created with apns and vendor credentials (%s)", app.AppID, strings.Join(names, ", "))

	spec := HybridSpec{RunID: r.id, Offline: r.cfg.DirectOffline, InvalidRate: r.cfg.SimInvalidRate, Seed: r.cfg.SimSeed}
	if slices.Contains(r.cfg.Pushes, ScenarioDirect) {
		spec.Direct = r.cfg.DirectDevices
	}
	if slices.Contains(r.cfg.Pushes, ScenarioMixed) {
		spec.PerChannel, spec.Channels = r.cfg.MixedPerChannel, MixedChannels
	}
	if quota != nil {
		spec.Quota, spec.QuotaDevices = quota, r.cfg.QuotaDevices
	}
	var err error
	if r.hybridPop, err = NewHybrid(spec); err != nil {
		return err
	}
	devs := r.hybridPop.Devices()
	r.rep.OwnChannel, r.rep.Mixed = len(r.hybridPop.Direct), len(r.hybridPop.Mixed)
	r.rep.QuotaFill, r.rep.Quota = len(r.hybridPop.QuotaFill), len(r.hybridPop.Quota)
	r.logf("seeding %d hybrid-app installations (own-channel scenario %d, mixed scenario %d, quota scenarios %d + %d)",
		len(devs), r.rep.OwnChannel, r.rep.Mixed, r.rep.QuotaFill, r.rep.Quota)
	n, secs, err := r.seedDevices(ctx, r.hybrid, devs)
	r.rep.Upserts += n
	if err != nil {
		return err
	}
	r.logf("seeded %d hybrid-app installations in %.2fs", n, secs)
	return nil
}

// ownConn is one connected own-channel device, on either protocol.
type ownConn interface {
	Close()
	Done() <-chan struct{}
}

// ownSet is the own-channel devices of one scenario: one ledger per device, kept across its
// connections.
type ownSet struct {
	mu      sync.Mutex
	devs    []*Device
	ledgers map[string]*sim.Ledger // by installation id
	conns   []ownConn
	retries int // connects refused (connect rate) and tried again
}

func (o *ownSet) close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	conns := o.conns
	o.conns = nil
	o.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// delta is what the devices received, as a simulator named "direct" would count it.
func (o *ownSet) delta() SimDelta {
	return ownDelta(o.devs, func(iid string) ledgerView { return o.ledgers[iid] })
}

// ledgerView is what the checks read of a device's ledger (*sim.Ledger).
type ledgerView interface {
	IDs() []string
	Times(id string) int
	Acked(id string) bool
	Data(id string) json.RawMessage
}

// ownDelta counts what own-channel devices received like a simulator's stats: per device
// (keyed by its token, the installation id) each receipt of a message, duplicates included.
func ownDelta(devs []*Device, ledger func(iid string) ledgerView) SimDelta {
	d := SimDelta{Name: push.ChannelDirect, PerToken: map[string]int64{}}
	for _, dev := range devs {
		l := ledger(dev.IID)
		var n int64
		for _, id := range l.IDs() {
			n += int64(l.Times(id))
		}
		if n > 0 {
			d.PerToken[dev.Token] = n
			d.Accepted += n
		}
	}
	return d
}

// checkOwn checks each own-channel device received exactly one message, once, acked it, and
// that it holds alert (the scenario's). A device that received nothing is left to Verify,
// which reports it as an expected token never accepted.
func checkOwn(devs []*Device, ledger func(iid string) ledgerView, alert any) []string {
	var p problems
	var multi, again, unacked, wrong []string
	for _, d := range devs {
		l := ledger(d.IID)
		ids := l.IDs()
		if len(ids) > 1 {
			multi = append(multi, d.IID)
		}
		for _, id := range ids {
			if l.Times(id) > 1 {
				again = append(again, d.IID)
			}
			if !l.Acked(id) {
				unacked = append(unacked, d.IID)
			}
			var got struct {
				Alert any `json:"alert"`
			}
			if json.Unmarshal(l.Data(id), &got) != nil || got.Alert != alert {
				wrong = append(wrong, d.IID)
			}
		}
	}
	p.tokens("own-channel devices that received more than one message", multi)
	p.tokens("own-channel devices that received a message more than once", again)
	p.tokens("own-channel devices that did not ack", unacked)
	p.tokens("own-channel devices that received another payload", wrong)
	return p.list
}

// Own-channel connects: in flight at once, attempts per device (the gateway refuses connects
// beyond its per-app rate; the device then backs off), and the backoff.
const (
	ownDialers    = 32
	ownAttempts   = 20
	ownBackoff    = 100 * time.Millisecond
	ownMaxBackoff = 2 * time.Second
)

// connectOwn connects the scenario's own-channel devices through the router: the online
// ones (offline false) or the offline ones (offline true). The first call makes the set.
func (r *run) connectOwn(ctx context.Context, s *Scenario, offline bool) (*ownSet, error) {
	if len(s.Own) == 0 {
		return nil, nil
	}
	o := &ownSet{devs: s.Own, ledgers: map[string]*sim.Ledger{}}
	for _, d := range s.Own {
		o.ledgers[d.IID] = sim.NewLedger()
	}
	return o, r.dialOwn(ctx, o, offline)
}

func (r *run) dialOwn(ctx context.Context, o *ownSet, offline bool) error {
	var devs []*Device
	for _, d := range o.devs {
		if d.Offline == offline {
			devs = append(devs, d)
		}
	}
	start := time.Now()
	o.mu.Lock()
	before := o.retries
	o.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(ownDialers)
	for _, d := range devs {
		g.Go(func() error {
			c, tries, err := r.dialOne(gctx, d, o.ledgers[d.IID])
			o.mu.Lock()
			defer o.mu.Unlock()
			o.retries += tries - 1
			if err != nil {
				return fmt.Errorf("cannot connect own-channel device %s (%s): %w", d.IID, d.Proto, err)
			}
			o.conns = append(o.conns, c)
			return nil
		})
	}
	err := g.Wait()
	what := "online"
	if offline {
		what = "offline"
	}
	o.mu.Lock()
	retried := o.retries - before
	o.mu.Unlock()
	r.logf("  connected %d %s own-channel devices in %.2fs (%d connects refused and retried)", len(devs), what, time.Since(start).Seconds(), retried)
	return err
}

// dialOne connects one device on its protocol, retrying a refusal with backoff.
func (r *run) dialOne(ctx context.Context, d *Device, l *sim.Ledger) (ownConn, int, error) {
	base := strings.TrimRight(r.cfg.PushdURL, "/")
	cfg := sim.DeviceConfig{API: base, AppID: r.hybrid.keys.appID, AppKey: r.hybrid.keys.appKey, InstallationID: d.IID, Ledger: l}
	wait := ownBackoff
	for attempt := 1; ; attempt++ {
		var c ownConn
		var err error
		if d.Proto == ProtoLC {
			c, err = sim.DialLCDevice(ctx, sim.LCDeviceConfig{DeviceConfig: cfg, SubProtocol: ProtoLC, PingEvery: time.Minute})
		} else {
			c, _, err = sim.DialDevice(ctx, cfg)
		}
		if err == nil {
			return c, attempt, nil
		}
		if attempt == ownAttempts || ctx.Err() != nil {
			return nil, attempt, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, attempt, ctx.Err()
		}
		wait = min(2*wait, ownMaxBackoff)
	}
}

// ownSettle bounds the wait for the own-channel devices to receive and ack, and for the
// records to count their arrivals, after the push is done.
const ownSettle = 2 * time.Minute

// finishOwn runs the own-channel part of a scenario once its push records are done: it checks
// the online devices got the message, connects the offline ones (their offline cache delivers
// it), waits for every device to ack and for the records to count the arrivals, and returns
// the records as they are then with the problems found.
func (r *run) finishOwn(ctx context.Context, api *client, s *Scenario, sr *ScenarioReport, o *ownSet, recs []record) ([]record, []string, error) {
	var p problems
	began := time.Now()
	for _, d := range o.devs {
		sr.OwnDevices++
		if d.Offline {
			sr.OwnOffline++
		}
		if d.Proto == ProtoLC {
			sr.OwnLC++
		}
	}
	if err := r.dialOwn(ctx, o, true); err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, ownSettle)
	defer cancel()
	want := int64(len(o.devs))
	poll := time.NewTicker(r.cfg.PollEvery)
	defer poll.Stop()
	var acked, arrivals int64
	for {
		acked = 0
		for _, d := range o.devs {
			l := o.ledgers[d.IID]
			if ids := l.IDs(); len(ids) > 0 && l.Acked(ids[0]) {
				acked++
			}
		}
		if acked == want {
			var err error
			if arrivals, err = r.readRecords(ctx, api, s.Name, sr.Records, recs); err != nil {
				return nil, nil, err
			}
			if arrivals >= want {
				break
			}
		}
		select {
		case <-poll.C:
			continue
		case <-wctx.Done():
		}
		if acked < want {
			p.addf("own channel: %d of %d devices acked the push within %v of its end", acked, want, ownSettle)
		} else {
			p.addf("own channel: the records count %d arrivals %v after every device (%d) acked", arrivals, ownSettle, want)
		}
		// The records as they are now, for the checks below.
		if _, err := r.readRecords(ctx, api, s.Name, sr.Records, recs); err != nil {
			return nil, nil, err
		}
		break
	}
	sr.OwnSeconds = time.Since(began).Seconds()
	p.list = append(p.list, checkOwn(o.devs, func(iid string) ledgerView { return o.ledgers[iid] }, data(s.Name)["alert"])...)
	var probs []string
	sr.Arrivals, sr.LCSuccesses, probs = checkOwnRecords(recs, want)
	p.list = append(p.list, probs...)
	return recs, p.list, nil
}

// checkOwnRecords sums the records' arrivals and lcSuccesses and checks both are want (every
// own-channel target written or cached, and acked), and that the arrivals are the own channel's.
func checkOwnRecords(recs []record, want int64) (arrivals, lcSuccesses int64, list []string) {
	var p problems
	var direct int64
	for _, rec := range recs {
		arrivals += rec.Arrivals
		lcSuccesses += rec.LCSuccesses
		direct += rec.Counts.ByChannel[push.ChannelDirect].Arrivals
	}
	if arrivals != want {
		p.addf("push records count %d arrivals, want %d (every own-channel device acked once)", arrivals, want)
	}
	if direct != arrivals {
		p.addf("push records count %d arrivals on channel direct, %d in all", direct, arrivals)
	}
	if lcSuccesses != want {
		p.addf("push records count lcSuccesses %d, want %d", lcSuccesses, want)
	}
	return arrivals, lcSuccesses, p.list
}

// readRecords reads the push records ids into recs and returns their arrivals.
func (r *run) readRecords(ctx context.Context, api *client, name string, ids []string, recs []record) (int64, error) {
	var arrivals int64
	for i, id := range ids {
		var rec record
		if _, err := api.do(ctx, http.MethodGet, "/1.1/tables/Notifications/"+id, authMaster, nil, &rec); err != nil {
			return 0, fmt.Errorf("cannot follow push %s of scenario %s: %w", id, name, err)
		}
		recs[i] = rec
		arrivals += rec.Arrivals
	}
	return arrivals, nil
}
