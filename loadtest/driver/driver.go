package driver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/internal/progress"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// Run performs one load test: it creates an app with APNs and FCM credentials pointing at the
// simulators' keys, seeds the installations, runs the scenarios one after another and
// verifies each against the simulators. The report is returned even when Run fails early
// (report.Error then says why); a verification failure is not an error: report.OK is false.
// progress receives one line per milestone and one per second while a push runs.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	cfg = cfg.withDefaults()
	rep := &Report{PushdURL: cfg.PushdURL, StartedAt: time.Now().UTC(), Concurrency: cfg.Concurrency}
	if err := cfg.Validate(); err != nil {
		return rep, fail(rep, fmt.Errorf("invalid configuration: %w", err))
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	r := &run{cfg: cfg, rep: rep, out: progress}
	r.mon = newMonitor(rep.StartedAt, cfg.PushdPIDFile, cfg.SampleEvery, r.acceptedNow)
	err := r.run(ctx)
	r.collect()
	if err != nil {
		return rep, fail(rep, err)
	}
	rep.Finish()
	return rep, nil
}

func fail(rep *Report, err error) error {
	rep.Error = err.Error()
	rep.Finish()
	return err
}

// run is the state of one Run.
type run struct {
	cfg   Config
	rep   *Report
	out   io.Writer
	id    string // random, makes tokens and req_ids unique per run
	api   *client
	sims  *http.Client
	pop   *Population
	stats []sim.Stats // the latest snapshot of every simulator
	// The hybrid (China edition) app of the direct and mixed scenarios, when one runs.
	hybrid    *client
	hybridPop *Hybrid
	mon       *monitor
}

func (r *run) logf(format string, args ...any) {
	fmt.Fprintf(r.out, format+"\n", args...)
}

// simFiles are what pushsim wrote into its -dir.
type simFiles struct {
	keyID string
	p8    []byte
	sa    []byte
	ca    []byte
}

func loadSimFiles(dir, keyID string) (simFiles, error) {
	var f simFiles
	if keyID == "" {
		keys, err := filepath.Glob(filepath.Join(dir, "AuthKey_*.p8"))
		if err != nil || len(keys) != 1 {
			return f, fmt.Errorf("cannot find the APNs key in %s: want exactly one AuthKey_<keyid>.p8 (found %d), or pass -apns-key-id", dir, len(keys))
		}
		keyID = strings.TrimSuffix(strings.TrimPrefix(filepath.Base(keys[0]), "AuthKey_"), ".p8")
	}
	f.keyID = keyID
	var err error
	if f.p8, err = os.ReadFile(filepath.Join(dir, "AuthKey_"+keyID+".p8")); err != nil {
		return f, fmt.Errorf("cannot read the APNs key: %w", err)
	}
	if f.sa, err = os.ReadFile(filepath.Join(dir, "service-account.json")); err != nil {
		return f, fmt.Errorf("cannot read the FCM service account: %w", err)
	}
	if f.ca, err = os.ReadFile(filepath.Join(dir, "ca.pem")); err != nil {
		return f, fmt.Errorf("cannot read the simulators' CA bundle: %w", err)
	}
	return f, nil
}

func (r *run) run(ctx context.Context) error {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("cannot make a run id: %w", err)
	}
	r.id = hex.EncodeToString(b[:])
	files, err := loadSimFiles(r.cfg.SimDir, r.cfg.APNsKeyID)
	if err != nil {
		return err
	}
	if r.sims, err = newSimClient(files.ca); err != nil {
		return err
	}
	r.api = newClient(strings.TrimRight(r.cfg.PushdURL, "/"), r.cfg.Concurrency, r.cfg.RequestDeadline)
	r.api.keys.adminToken = r.cfg.AdminToken
	defer func() { r.rep.Retries = r.api.retries.Load() }()

	if err := r.waitReady(ctx); err != nil {
		return err
	}
	r.mon.run(ctx)
	if err := r.createApp(ctx, files); err != nil {
		return err
	}
	cohort := 0
	if slices.Contains(r.cfg.Pushes, ScenarioInvalid) {
		cohort = r.cfg.InvalidCohort
	}
	r.pop, err = NewPopulation(PopulationSpec{
		RunID: r.id, N: r.cfg.Installations, IOSFraction: r.cfg.IOSFraction,
		Cohort: cohort, DeadFraction: r.cfg.DeadFraction, InvalidRate: r.cfg.SimInvalidRate, Seed: r.cfg.SimSeed,
	})
	if err != nil {
		return err
	}
	if err := r.seed(ctx); err != nil {
		return err
	}
	if slices.ContainsFunc(r.cfg.Pushes, IsHybrid) {
		if err := r.setupHybrid(ctx, files); err != nil {
			return err
		}
	}
	r.rep.Settle = r.settle(ctx)
	if r.stats, err = fetchAll(ctx, r.sims, r.cfg.Sims); err != nil {
		return err
	}
	names := slices.Clone(r.cfg.Pushes)
	if i := slices.Index(names, ScenarioInvalid); i >= 0 {
		names = slices.Insert(names, i+1, ScenarioInvalidAgain)
	}
	if i := slices.Index(names, ScenarioQuota); i >= 0 {
		names = slices.Insert(names, i, ScenarioQuotaFill)
	}
	names = withLatencyScenario(names, r.cfg.LatencyCompare)
	for i, name := range names {
		var sc Scenario
		switch {
		case r.cfg.LatencyCompare > 0 && name == latencyScenario(r.cfg.LatencyCompare):
			if err := r.setSimLatency(ctx, r.cfg.LatencyCompare); err != nil {
				return err
			}
			sc, err = BuildScenario(ScenarioAll, r.pop, r.cfg.DevicesPerType)
			sc.Name = name
		case name == ScenarioQuotaFill || name == ScenarioQuota:
			sc, err = buildQuotaScenario(name, r.hybridPop, r.cfg.QuotaExpiry)
		case IsHybrid(name):
			sc, err = BuildHybridScenario(name, r.hybridPop)
		default:
			sc, err = BuildScenario(name, r.pop, r.cfg.DevicesPerType)
		}
		if err != nil {
			return err
		}
		sr, err := r.scenario(ctx, i, &sc)
		if sr != nil {
			r.rep.Scenarios = append(r.rep.Scenarios, *sr)
		}
		if r.cfg.LatencyCompare > 0 && name == latencyScenario(r.cfg.LatencyCompare) {
			// The floor at both latencies right after the push, the latency still set first.
			reset := func() error { return r.setSimLatency(context.WithoutCancel(ctx), 0) }
			var floors []LatencyFloor
			var lerr error
			if err == nil {
				floors, lerr = r.latencyFloors(ctx, files, sr, reset)
			} else {
				lerr = reset()
			}
			if lerr != nil && err == nil {
				err = lerr
			}
			r.rep.Latency = latencyComparison(r.rep.Scenarios, r.cfg.LatencyCompare, floors)
		}
		if err != nil {
			return err
		}
	}
	// The floor's requests reach the APNs simulator after the last scenario's stats were read,
	// so they count in no scenario. Its failures are in the report, not the run's.
	if err := r.runFloor(ctx, files); err != nil {
		r.logf("floor: %v", err)
	}
	return nil
}

// readyAttempts bounds the wait for /readyz (with readyEvery between attempts).
const (
	readyAttempts = 600
	readyEvery    = 100 * time.Millisecond
)

func (r *run) waitReady(ctx context.Context) error {
	var last error
	for range readyAttempts {
		_, _, err := r.api.once(ctx, http.MethodGet, "/readyz", authNone, nil, nil)
		if err == nil {
			return nil
		}
		last = err
		t := time.NewTimer(readyEvery)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cannot reach pushd at %s: %w (last: %v)", r.cfg.PushdURL, ctx.Err(), last)
		}
	}
	return fmt.Errorf("pushd at %s is not ready after %v: %w", r.cfg.PushdURL, readyAttempts*readyEvery, last)
}

func (r *run) createApp(ctx context.Context, f simFiles) error {
	name := r.cfg.AppName
	if name == "" {
		name = "loadtest-" + r.id
	}
	body := map[string]any{"name": name, "settings": map[string]any{
		"edition":        push.EditionInternational, // fcm exists only in the international edition
		"callsPerMinute": push.MaxCallsPerMinute,
		"dailyVolume":    int64(1) << 40, // never the limit of a load test
	}}
	var app struct {
		AppID     string `json:"appId"`
		AppKey    string `json:"appKey"`
		MasterKey string `json:"masterKey"`
	}
	if _, err := r.api.do(ctx, http.MethodPost, "/admin/apps", authAdmin, body, &app); err != nil {
		return fmt.Errorf("cannot create the load-test app: %w", err)
	}
	if app.AppID == "" || app.AppKey == "" || app.MasterKey == "" {
		return errors.New("cannot create the load-test app: the answer lacks appId, appKey or masterKey")
	}
	r.api.keys.appID, r.api.keys.appKey, r.api.keys.masterKey = app.AppID, app.AppKey, app.MasterKey
	r.rep.AppID = app.AppID
	apns := map[string]any{
		"defaultTopic": r.cfg.Topic,
		"teams":        []map[string]string{{"teamId": r.cfg.APNsTeamID, "keyId": f.keyID, "p8": string(f.p8)}},
	}
	if _, err := r.api.do(ctx, http.MethodPut, "/admin/apps/"+app.AppID+"/credentials/apns", authAdmin, apns, nil); err != nil {
		return fmt.Errorf("cannot upload the APNs credentials of app %s: %w", app.AppID, err)
	}
	if _, err := r.api.do(ctx, http.MethodPut, "/admin/apps/"+app.AppID+"/credentials/fcm", authAdmin, f.sa, nil); err != nil {
		return fmt.Errorf("cannot upload the FCM credentials of app %s: %w", app.AppID, err)
	}
	r.logf("app %s created with apns (key %s, team %s, topic %s) and fcm credentials", app.AppID, f.keyID, r.cfg.APNsTeamID, r.cfg.Topic)
	return nil
}

// seed creates every installation with cfg.Concurrency upserts in flight.
func (r *run) seed(ctx context.Context) error {
	devs := make([]*Device, 0, len(r.pop.Main)+len(r.pop.Doomed))
	for i := range r.pop.Main {
		d := &r.pop.Main[i]
		devs = append(devs, d)
		if d.IOS {
			r.rep.IOS++
		} else {
			r.rep.Android++
		}
	}
	for i := range r.pop.Doomed {
		devs = append(devs, &r.pop.Doomed[i])
		if r.pop.Doomed[i].Dead {
			r.rep.DeadTokens++
		}
	}
	r.rep.Installations, r.rep.InvalidCohort = len(r.pop.Main), len(r.pop.Doomed)
	r.logf("seeding %d installations (%d iOS, %d Android/FCM, invalid-token cohort %d) with %d in flight",
		len(devs), r.rep.IOS, r.rep.Android, len(r.pop.Doomed), r.cfg.Concurrency)
	seed := r.seedDevices
	if r.cfg.SeedImport {
		seed = func(ctx context.Context, _ *client, devs []*Device) (int, float64, error) {
			return r.seedImport(ctx, devs)
		}
	}
	n, secs, err := seed(ctx, r.api, devs)
	r.rep.Upserts = n
	r.rep.UpsertSeconds, r.rep.UpsertsPerSecond = secs, rate(int64(n), secs)
	if err != nil {
		return err
	}
	r.logf("seeded %d installations in %.2fs: %.0f upserts/s", len(devs), secs, r.rep.UpsertsPerSecond)
	return nil
}

// seedDevices creates devs in the app of api with cfg.Concurrency upserts in flight and
// returns how many it created and how long that took.
func (r *run) seedDevices(ctx context.Context, api *client, devs []*Device) (int, float64, error) {
	var next, done atomic.Int64
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for range min(r.cfg.Concurrency, len(devs)) {
		g.Go(func() error {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(devs)) || gctx.Err() != nil {
					return nil
				}
				d := devs[i]
				var res struct {
					ObjectID string `json:"objectId"`
				}
				t0 := time.Now()
				status, err := api.do(gctx, http.MethodPost, "/1.1/installations", authApp, d.Body(r.cfg.Topic), &res)
				r.mon.timed(false, t0)
				if err != nil {
					return fmt.Errorf("cannot create installation %d: %w", i, err)
				}
				if status != http.StatusCreated || res.ObjectID == "" {
					return fmt.Errorf("cannot create installation %d: HTTP %d (want 201 and an objectId: a device id collided?)", i, status)
				}
				d.ObjectID = res.ObjectID
				done.Add(1)
			}
		})
	}
	meter := &progress.Meter{W: r.out, Label: "  seeding", Unit: "installations", Interval: r.cfg.ProgressEvery, Total: int64(len(devs))}
	if r.cfg.Terminal != nil {
		meter.W, meter.Terminal = r.cfg.Terminal, true
	}
	meter.Update(0, 0)
	stop := make(chan struct{})
	// The meter decides when to print (a redraw on a terminal, a line every ProgressEvery
	// otherwise); the ticker only has to come often enough for either.
	ticker := time.NewTicker(min(r.cfg.ProgressEvery, 200*time.Millisecond))
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		for {
			select {
			case <-ticker.C:
				n := done.Load()
				meter.Update(n, n)
			case <-stop:
				return
			}
		}
	}()
	err := g.Wait()
	ticker.Stop()
	close(stop)
	<-watcher
	if meter.Terminal {
		n := done.Load()
		meter.Done(n, n) // ends the redrawn line before the next log line
	}
	secs := time.Since(start).Seconds()
	if err == nil && done.Load() != int64(len(devs)) {
		err = fmt.Errorf("cannot seed installations: stopped after %d of %d: %w", done.Load(), len(devs), context.Cause(ctx))
	}
	return int(done.Load()), secs, err
}

// record is the part of a push record the driver reads.
type record struct {
	ObjectID    string       `json:"objectId"`
	Status      string       `json:"status"`
	CreatedAt   string       `json:"createdAt"`
	UpdatedAt   string       `json:"updatedAt"`
	Errors      []string     `json:"errors"`
	Stopped     string       `json:"stopped"`
	Counts      recordCounts `json:"counts"`
	Pending     int64        `json:"pending"` // targets without an outcome yet (the funnel)
	Arrivals    int64        `json:"arrivals"`
	LCSuccesses int64        `json:"lcSuccesses"`
}

func terminal(status string) bool { return status == push.StatusDone || status == push.StatusCancelled }

// scenario runs one scenario, verifies it and returns its report line.
func (r *run) scenario(ctx context.Context, idx int, s *Scenario) (*ScenarioReport, error) {
	sr := &ScenarioReport{Name: s.Name, ExpectedTargets: s.Expect.Targets()}
	r.logf("scenario %s: %d calls, %d targets expected", s.Name, len(s.Requests), sr.ExpectedTargets)
	api := r.api
	if s.Hybrid {
		api = r.hybrid
	}
	own, err := r.connectOwn(ctx, s, false)
	defer own.close()
	if err != nil {
		return nil, err
	}
	prof, err := r.startProfile(ctx, s.Name)
	if err != nil {
		return nil, err
	}
	p0, pid0, measured := r.mon.proc()
	base := sumAccepted(r.stats)
	start := time.Now()
	sr.StartT = start.Sub(r.rep.StartedAt).Seconds()
	var acceptAt time.Time
	// A call pushd refuses (4xx) fails the scenario but not the run: the accepted calls are
	// still followed, so their deliveries are not counted in the next scenario.
	refused := map[string]int{}
	var refusedOrder []string
	for i, req := range s.Requests {
		body := maps.Clone(req.Body)
		// A retried call is then the same push, never a second one.
		body["req_id"] = fmt.Sprintf("%s%02d%03d", r.id[:8], idx, i)
		var res struct {
			ObjectID string `json:"objectId"`
		}
		t0 := time.Now()
		_, err := api.do(ctx, http.MethodPost, req.Path, authMaster, body, &res)
		r.mon.timed(true, t0)
		if err == nil && acceptAt.IsZero() {
			acceptAt = time.Now()
		}
		if err != nil {
			if st := statusOf(err); st/100 != 4 || st == http.StatusTooManyRequests {
				return nil, fmt.Errorf("cannot start scenario %s: %w", s.Name, err)
			}
			if refused[err.Error()] == 0 {
				refusedOrder = append(refusedOrder, err.Error())
			}
			refused[err.Error()]++
			continue
		}
		sr.Records = append(sr.Records, res.ObjectID)
	}
	for _, msg := range refusedOrder {
		r.logf("  %s: %d of %d calls refused: %s", s.Name, refused[msg], len(s.Requests), msg)
	}
	if s.Name == ScenarioKill && len(sr.Records) > 0 {
		threshold := int64(math.Ceil(r.cfg.KillAt * float64(sr.ExpectedTargets)))
		at, err := r.killMidPush(ctx, threshold)
		if err != nil {
			return nil, fmt.Errorf("cannot kill pushd mid-push in scenario %s: %w", s.Name, err)
		}
		sr.Kills, sr.KilledAtAccepted = 1, at
	}
	recs, err := r.waitDone(ctx, api, s.Name, sr.Records, sr.ExpectedTargets, start)
	sr.Seconds = time.Since(start).Seconds()
	sr.EndT = sr.StartT + sr.Seconds
	if err != nil {
		return nil, err
	}
	// A sample now, when every record is done: the simulators have the scenario's last
	// delivery (the monitor's next tick may come only after the stats are read).
	r.mon.sample(ctx)
	if p1, pid1, ok := r.mon.proc(); measured && ok && pid1 == pid0 {
		sr.CPUSeconds = (p1.CPU - p0.CPU).Seconds()
		sr.RSSStart, sr.RSSEnd = p0.RSS, p1.RSS
		if p0.HaveIO && p1.HaveIO {
			sr.Reads, sr.Writes = p1.Reads-p0.Reads, p1.Writes-p0.Writes
		}
	}
	if err := prof.finish(ctx); err != nil {
		return nil, err
	}
	var ownProblems []string
	if len(s.Own) > 0 && len(sr.Records) > 0 {
		if recs, ownProblems, err = r.finishOwn(ctx, api, s, sr, own, recs); err != nil {
			return nil, err
		}
	}
	var rc RecordCounts
	var first, last time.Time
	for _, rec := range recs {
		errs := slices.Clone(rec.Errors)
		if rec.Stopped != "" {
			errs = append(errs, "stopped: "+rec.Stopped)
		}
		rc.Add(rec.Status, rec.Counts.ByChannel, errs)
		if t, err := time.Parse(time.RFC3339Nano, rec.CreatedAt); err == nil && (first.IsZero() || t.Before(first)) {
			first = t
		}
		if t, err := time.Parse(time.RFC3339Nano, rec.UpdatedAt); err == nil && t.After(last) {
			last = t
		}
	}
	if !first.IsZero() && last.After(first) {
		sr.ServerSeconds = last.Sub(first).Seconds()
	}
	for _, rec := range recs {
		sr.Problems = append(sr.Problems, rec.funnelProblems()...)
	}
	if e := s.Expect.EndsAfter; e > 0 && len(recs) > 0 && sr.ServerSeconds < e.Seconds() {
		sr.Problems = append(sr.Problems, fmt.Sprintf("the push records were done %.2fs after they were created, before the push expired (%v): its targets must fail only then", sr.ServerSeconds, e))
	}
	sr.Targets, sr.Sent, sr.Failed = rc.Total.Targets, rc.Total.Sent, rc.Total.Failed
	sr.Expired, sr.Invalid = rc.Total.Expired, rc.Total.InvalidTokens
	sr.DeliveriesPerSecond = rate(sr.Sent, sr.Seconds)
	sr.ByChannel = rc.ByChannel

	deltas, err := r.simDeltas(ctx, rc.Total.Sent-rc.ByChannel[push.ChannelDirect].Sent+rc.Total.InvalidTokens)
	if err != nil {
		return sr, err
	}
	if len(s.Own) > 0 {
		deltas = append(deltas, own.delta())
	}
	r.scenarioFigures(sr, acceptAt, base, sumAccepted(r.stats))
	sr.Problems = append(sr.Problems, ownProblems...)
	for _, msg := range refusedOrder {
		sr.Problems = append(sr.Problems, fmt.Sprintf("%d of %d push calls refused: %s", refused[msg], len(s.Requests), msg))
	}
	sr.Problems = append(sr.Problems, Verify(&s.Expect, rc, deltas)...)
	if s.Expect.AtLeastOnce {
		sr.Duplicates, _ = Duplicates(&s.Expect, deltas)
		sr.DuplicateRate = float64(sr.Duplicates) / float64(max(sr.ExpectedTargets, 1))
	}
	sr.Problems = append(sr.Problems, r.checkGone(ctx, s.Gone)...)
	sr.Verification = VerdictOK
	if len(sr.Problems) > 0 {
		sr.Verification = VerdictFail
	}
	r.logf("scenario %s: %d/%d sent, %d failed, %d invalid in %.2fs (%.0f deliveries/s): %s",
		s.Name, sr.Sent, sr.Targets, sr.Failed, sr.Invalid, sr.Seconds, sr.DeliveriesPerSecond, sr.Verification)
	if sr.Kills > 0 {
		r.logf("scenario %s: SIGKILL at %d accepted (%.1f%%); %d duplicates = %.3f%% of %d targets",
			s.Name, sr.KilledAtAccepted, 100*float64(sr.KilledAtAccepted)/float64(max(sr.ExpectedTargets, 1)),
			sr.Duplicates, 100*sr.DuplicateRate, sr.ExpectedTargets)
	}
	return sr, nil
}

// Stats settling: a simulator may count an answer a moment after pushd has it (it writes the
// answer, then counts), so the stats are read again, a bounded number of times, while they
// show fewer answers than the records count.
const (
	settleAttempts = 40
	settleEvery    = 50 * time.Millisecond
)

// simDeltas reads every simulator and returns what each answered since the last read.
// want is the number of accepted plus dead answers the push records count.
func (r *run) simDeltas(ctx context.Context, want int64) ([]SimDelta, error) {
	var after []sim.Stats
	var deltas []SimDelta
	for attempt := 1; ; attempt++ {
		var err error
		if after, err = fetchAll(ctx, r.sims, r.cfg.Sims); err != nil {
			return nil, err
		}
		deltas = make([]SimDelta, len(after))
		var seen int64
		for i := range after {
			deltas[i] = Delta(r.cfg.Sims[i].Name, r.stats[i], after[i])
			seen += deltas[i].Accepted + deltas[i].Dead
		}
		if seen >= want || attempt == settleAttempts {
			break
		}
		t := time.NewTimer(settleEvery)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("cannot read the simulators' stats: %w", ctx.Err())
		}
	}
	r.stats = after
	return deltas, nil
}

// waitDone polls the records until each is done (or cancelled), printing progress against
// the expected number of targets.
func (r *run) waitDone(ctx context.Context, api *client, name string, ids []string, expected int, start time.Time) ([]record, error) {
	recs := make([]record, len(ids))
	poll := time.NewTicker(r.cfg.PollEvery)
	defer poll.Stop()
	lastPrint := time.Now()
	for {
		all := true
		for i, id := range ids {
			if terminal(recs[i].Status) {
				continue
			}
			var rec record
			if _, err := api.do(ctx, http.MethodGet, "/1.1/tables/Notifications/"+id, authMaster, nil, &rec); err != nil {
				return nil, fmt.Errorf("cannot follow push %s of scenario %s: %w", id, name, err)
			}
			recs[i] = rec
			all = all && terminal(rec.Status)
		}
		if all {
			return recs, nil
		}
		if time.Since(lastPrint) >= r.cfg.ProgressEvery {
			lastPrint = time.Now()
			var t push.Tally
			status := ""
			for _, rec := range recs {
				for _, ct := range rec.Counts.ByChannel {
					t.Add(ct)
				}
				if !terminal(rec.Status) && status == "" {
					status = rec.Status
				}
			}
			r.logf("  %s: %d/%d sent, %d failed, %d invalid; %d targets counted so far (%s, %.1fs)", name, t.Sent, expected,
				t.Failed, t.InvalidTokens, t.Targets, status, time.Since(start).Seconds())
		}
		select {
		case <-poll.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("cannot wait for scenario %s to finish: %w", name, ctx.Err())
		}
	}
}

// checkGone checks that each installation was deleted (its token was reported dead).
func (r *run) checkGone(ctx context.Context, ids []string) []string {
	still := 0
	var errs []string
	for _, id := range ids {
		_, err := r.api.do(ctx, http.MethodGet, "/1.1/installations/"+id, authApp, nil, nil)
		switch {
		case statusOf(err) == http.StatusNotFound:
		case err == nil:
			still++
		default:
			if len(errs) < 3 {
				errs = append(errs, fmt.Sprintf("cannot check that installation %s was deleted: %v", id, err))
			}
		}
	}
	if still > 0 {
		errs = append(errs, fmt.Sprintf("installations with dead tokens still present: %d of %d", still, len(ids)))
	}
	return errs
}
