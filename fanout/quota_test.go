package fanout

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

// seedVivo adds n hybrid vivo installations (installation ids vq-<i>, registration ids
// vreg-<i>) subscribed to "vq".
func (e *env) seedVivo(buckets, n int) {
	e.t.Helper()
	now := time.Now()
	insts := make([]push.Installation, 0, n)
	for i := range n {
		r := push.Route{
			ObjectID: fmt.Sprintf("v%07d", i), DeviceType: push.DeviceAndroid,
			InstallationID: fmt.Sprintf("vq-%d", i), RegistrationID: quotaRegID(i),
			Vendor: push.ChannelVivo, Channels: []string{"vq"}, UpdatedAt: now.UnixMilli(),
		}
		doc, _ := json.Marshal(map[string]any{
			"objectId": r.ObjectID, "deviceType": r.DeviceType, "installationId": r.InstallationID,
			"registrationId": r.RegistrationID, "vendor": r.Vendor, "channels": r.Channels,
			"createdAt": now.UTC().Format(push.TimeLayout), "updatedAt": now.UTC().Format(push.TimeLayout),
		})
		insts = append(insts, push.Installation{Route: r, CreatedAt: now.UnixMilli(), Doc: doc})
	}
	if err := e.st.SeedInstallations(testApp, buckets, insts); err != nil {
		e.t.Fatal(err)
	}
}

// vqOnline is a Presence: vq-<i> with i < n are connected to the own channel.
type vqOnline int

func (n vqOnline) Online(_ context.Context, app string, iids []string, online []bool) error {
	for k, iid := range iids {
		i, err := strconv.Atoi(strings.TrimPrefix(iid, "vq-"))
		online[k] = app == testApp && err == nil && i < int(n)
	}
	return nil
}

// evLedger is an Events keeping every event.
type evLedger struct {
	mu  sync.Mutex
	evs []webhook.Event
}

func (l *evLedger) Enabled(string) bool { return true }
func (l *evLedger) Emit(ev webhook.Event) bool {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
	return true
}

// byType counts the events of one push by type.
func (l *evLedger) byType(pushID string) map[webhook.Type]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[webhook.Type]int{}
	for _, ev := range l.evs {
		if ev.PushID == pushID {
			out[ev.Type]++
		}
	}
	return out
}

// quotaRig is a planner and a worker on an injected clock, and a deferrals re-driver on the
// same clock that the test ticks.
type quotaRig struct {
	e   *env
	clk *fakeClock
	snd *recSender
	dr  *Deferrals
	ev  *evLedger
}

func newQuotaRig(t *testing.T, devices, online int, mod func(*push.AppSettings)) *quotaRig {
	const buckets = 16
	e := newEnv(t)
	e.createApp(buckets, mod)
	e.seedVivo(buckets, devices)
	// The wall clock's now (render judges expiry by it), advanced only by the test.
	clk := &fakeClock{now: time.Now()}
	snd := newRecSender()
	cfg := DefaultWorkerConfig()
	cfg.clock = clk
	ev := &evLedger{}
	ctx, cancel := context.WithCancel(context.Background())
	pl, err := NewPlanner(DefaultPlannerConfig(), e.st, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(cfg, e.st, e.lg, snd, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	w.SetPresence(vqOnline(online))
	w.SetEvents(ev)
	done := make(chan struct{}, 2)
	go func() { _ = pl.Run(ctx); done <- struct{}{} }()
	go func() { _ = w.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	dcfg := DefaultDeferralsConfig()
	dcfg.clock = clk
	dr, err := NewDeferrals(dcfg, e.st, snd, nil, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	dr.SetPresence(vqOnline(online))
	dr.SetEvents(ev)
	return &quotaRig{e: e, clk: clk, snd: snd, dr: dr, ev: ev}
}

// untilReset is how long after the clock's now the quota day (China) rolls over, plus a second.
func (q *quotaRig) untilReset() time.Duration {
	now := q.clk.Now()
	_, end := push.QuotaWindow(now, push.ChinaTime)
	return end.Sub(now) + time.Second
}

// push sends a push to "vq" expiring after exp (0: never) and waits for its fan-out.
func (q *quotaRig) push(policy string, exp time.Duration) push.Notification {
	job := push.Job{Where: json.RawMessage(`{"channels":"vq"}`), ChannelPolicy: policy}
	if exp > 0 {
		job.ExpiresAt = q.clk.Now().Add(exp)
	}
	job = q.e.submit(job)
	return q.e.waitDone(job.NotificationObjectID)
}

// tick re-drives until nothing due is left, and returns the push's record.
func (q *quotaRig) tick(t *testing.T, pushID string) push.Notification {
	t.Helper()
	for {
		n, err := q.dr.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return q.e.record(pushID)
		}
	}
}

// checkFunnel checks targets = sent + failed + expired + invalid + deferred per channel (the
// push's fan-out is done: nothing pending).
func checkFunnel(t *testing.T, c push.Counts) {
	t.Helper()
	for ch, v := range c {
		if v.Targets != v.Sent+v.Failed+v.Expired+v.InvalidTokens+v.Deferred {
			t.Errorf("%s: %+v: targets != sent + failed + expired + invalid + deferred", ch, v)
		}
	}
}

// The quota scenario at the fan-out: a vivo daily quota of 500 (app settings) and
// 2,000 hybrid vivo devices, half connected to the own channel. Under own_first the 1,000
// connected go to the own channel, 500 to vivo and 500 are deferred (record: deferred 500,
// webhook: 500 deferred events), none sent before the quota day rolls over; after it, the
// re-driver sends the 500 within the new day's budget and the record moves them to sent.
// Under vendor the same push sends 500 and defers 1,500, of which the next day sends 500 and
// keeps 1,000 waiting; a push that expires before the day rolls over sends none after its
// expiry: its deferred targets end expired.
func TestQuotaScenarioOwnFirst(t *testing.T) {
	q := newQuotaRig(t, 2000, 1000, func(s *push.AppSettings) {
		s.ChannelPolicy = push.PolicyOwnFirst
		s.VendorQuotas.Vivo = push.VendorQuota{Daily: 500}
	})
	rec := q.push("", 48*time.Hour)
	checkFunnel(t, rec.Counts)
	if d, v := rec.Counts[push.ChannelDirect], rec.Counts[push.ChannelVivo]; d.Targets != 1000 || d.Sent != 1000 ||
		v.Targets != 1000 || v.Sent != 500 || v.Deferred != 500 {
		t.Fatalf("record after fan-out: direct %+v, vivo %+v; want 1000 on the own channel, vivo 500 sent + 500 deferred", d, v)
	}
	if n := q.snd.count(); n != 1500 {
		t.Fatalf("%d deliveries handed to the sender, want 1500 (the deferred 500 held back)", n)
	}
	if got := q.ev.byType(rec.ObjectID); got[webhook.Deferred] != 500 {
		t.Errorf("webhook events %v: want 500 deferred", got)
	}
	// Nothing is due before the day rolls over.
	if rec := q.tick(t, rec.ObjectID); rec.Counts[push.ChannelVivo].Deferred != 500 || q.snd.count() != 1500 {
		t.Fatalf("before the reset: vivo %+v, %d sent; want nothing re-driven", rec.Counts[push.ChannelVivo], q.snd.count())
	}
	q.clk.advance(q.untilReset()) // 00:00:01 the next China day
	rec = q.tick(t, rec.ObjectID)
	checkFunnel(t, rec.Counts)
	if v := rec.Counts[push.ChannelVivo]; v.Targets != 1000 || v.Sent != 1000 || v.Deferred != 0 {
		t.Fatalf("after the reset: vivo %+v, want 1000 sent, 0 deferred", v)
	}
	if n, d := q.snd.count(), q.snd.distinct(); n != 2000 || d != 2000 {
		t.Fatalf("%d deliveries to %d devices, want each of the 2000 once", n, d)
	}
	// The own channel's 1000 are reported sent here by the test's sender (the real own channel's
	// gateway reports them itself).
	if got := q.ev.byType(rec.ObjectID); got[webhook.Sent] != 2000 || got[webhook.Deferred] != 500 {
		t.Errorf("webhook events %v: want 2000 sent (500 of them after the deferral), 500 deferred", got)
	}
}

func TestQuotaScenarioVendorPolicy(t *testing.T) {
	q := newQuotaRig(t, 2000, 1000, func(s *push.AppSettings) { s.VendorQuotas.Vivo = push.VendorQuota{Daily: 500} })
	// It expires 12 hours into the next quota day.
	rec := q.push(push.PolicyVendor, q.untilReset()+12*time.Hour)
	checkFunnel(t, rec.Counts)
	if v := rec.Counts[push.ChannelVivo]; v.Targets != 2000 || v.Sent != 500 || v.Deferred != 1500 || len(rec.Counts) != 1 {
		t.Fatalf("record %v: want vivo 500 sent + 1500 deferred", rec.Counts)
	}
	q.clk.advance(q.untilReset())
	rec = q.tick(t, rec.ObjectID)
	checkFunnel(t, rec.Counts)
	if v := rec.Counts[push.ChannelVivo]; v.Sent != 1000 || v.Deferred != 1000 {
		t.Fatalf("day 2: vivo %+v, want 1000 sent, 1000 deferred (the day's budget is 500)", v)
	}
	// The push expires before the third day: none of the rest is sent.
	q.clk.advance(24 * time.Hour)
	rec = q.tick(t, rec.ObjectID)
	checkFunnel(t, rec.Counts)
	if v := rec.Counts[push.ChannelVivo]; v.Sent != 1000 || v.Expired != 1000 || v.Deferred != 0 {
		t.Fatalf("after expiry: vivo %+v, want 1000 sent, 1000 expired, 0 deferred", v)
	}
	if n := q.snd.count(); n != 1000 {
		t.Fatalf("%d deliveries handed to the sender, want 1000 (none after the push expired)", n)
	}
}

// Under vendor_first the targets over the budget go to the own channel (cached if offline)
// instead of waiting for the next day.
func TestQuotaVendorFirstFallsBack(t *testing.T) {
	q := newQuotaRig(t, 200, 0, func(s *push.AppSettings) {
		s.ChannelPolicy = push.PolicyVendorFirst
		s.VendorQuotas.Vivo = push.VendorQuota{Daily: 50}
	})
	rec := q.push("", 48*time.Hour)
	if d, v := rec.Counts[push.ChannelDirect], rec.Counts[push.ChannelVivo]; v.Targets != 50 || v.Sent != 50 || v.Deferred != 0 || d.Targets != 150 {
		t.Fatalf("record %v: want vivo 50 sent, the other 150 on the own channel", rec.Counts)
	}
	q.snd.mu.Lock()
	defer q.snd.mu.Unlock()
	own := 0
	for id := range q.snd.got {
		if strings.HasPrefix(id, "v") {
			own++
		}
	}
	if own != 200 {
		t.Errorf("%d devices reached, want 200", own)
	}
}

// A vendor's own answer that its quota is spent (the sender's OutcomeDeferred) defers the
// target the same way, without a configured budget, and the next day sends it.
func TestQuotaVendorReplyDefers(t *testing.T) {
	q := newQuotaRig(t, 100, 0, nil)
	var mu sync.Mutex
	spent := true
	q.snd.outcome = func(d *push.Delivery) push.Result {
		mu.Lock()
		defer mu.Unlock()
		if spent && d.Target.Channel == push.ChannelVivo {
			return push.Result{Outcome: push.OutcomeDeferred, Reason: "vivo 10070"}
		}
		return push.Result{Outcome: push.OutcomeSent}
	}
	rec := q.push(push.PolicyVendor, 48*time.Hour)
	if v := rec.Counts[push.ChannelVivo]; v.Targets != 100 || v.Deferred != 100 || v.Sent != 0 {
		t.Fatalf("record %v: want vivo 100 deferred", rec.Counts)
	}
	mu.Lock()
	spent = false
	mu.Unlock()
	q.clk.advance(q.untilReset())
	rec = q.tick(t, rec.ObjectID)
	if v := rec.Counts[push.ChannelVivo]; v.Sent != 100 || v.Deferred != 0 {
		t.Fatalf("after the reset: vivo %+v, want 100 sent", v)
	}
	if got := q.ev.byType(rec.ObjectID); got[webhook.Deferred] != 100 || got[webhook.Sent] != 100 {
		t.Errorf("webhook events %v: want 100 deferred then 100 sent", got)
	}
}
