package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/sender/sendertest"
	"github.com/pushd/pushd/sender/vivo"
)

// quotaRegID is the vivo registration id of test device i (vivo's 23-digit form).
func quotaRegID(i int) string { return fmt.Sprintf("1563853541030200%07d", i) }

const quotaAppKey = "quota-app-key"

type keepTokens struct{}

func (keepTokens) InvalidateToken(context.Context, string, string, string, time.Time) error {
	return nil
}

func (keepTokens) DropVendorToken(context.Context, string, string, string, time.Time) error {
	return nil
}

// realQuotaRig is the quota scenario on real parts: Pebble and the embedded log, the vivo
// simulator over real HTTPS through sender.Dispatcher, the own channel's gateway (direct.Core
// and Server) with devices connected over real WebSockets on loopback, fan-out's planner and
// worker, and the deferrals re-driver; fan-out's clock is injected (the quota day rolls over
// when the test says).
type realQuotaRig struct {
	e       *env
	clk     *fakeClock
	vivo    *sim.Vivo
	dr      *Deferrals
	ledgers []*sim.Ledger // of the connected devices
}

func newRealQuotaRig(t *testing.T, devices, online int, daily int64, policy string) *realQuotaRig {
	const buckets = 16
	e := newEnv(t)
	s := push.DefaultSettings()
	s.Buckets, s.DailyVolume = buckets, 0
	s.ChannelPolicy = policy
	s.VendorQuotas.Vivo = push.VendorQuota{Daily: daily}
	now := time.Now()
	if err := e.st.CreateApp(context.Background(), push.App{ID: testApp, Name: "quota", AppKey: quotaAppKey, MasterKey: "m",
		Settings: s, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	e.seedVivo(buckets, devices)

	vs, err := sim.NewVivo(sim.VivoConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vs.Close() })
	key, secret := vs.NewApp("10004")
	creds, _ := json.Marshal(map[string]vivo.ProfileJSON{push.DefaultProfile: {AppID: "10004", AppKey: key, AppSecret: secret}})
	d := sender.New(sender.Config{Workers: 8, IdleTimeout: time.Minute, Vivo: vivo.Config{Endpoint: vs.URL(), TLS: vs.ClientTLS()}},
		sendertest.StoredApps{Store: e.st, Channel: push.ChannelVivo, Creds: creds}, keepTokens{}, zap.NewNop(), metrics.NewSet())
	d.SetDeferQuota()
	t.Cleanup(d.Close)

	set := metrics.NewSet()
	dcfg := direct.Config{Addr: "127.0.0.1:0"}
	core := direct.NewCore(dcfg, e.st, zap.NewNop(), set)
	srv := direct.NewServer(dcfg, core, e.st, e.st, zap.NewNop(), set)
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h := direct.NewHandoff(d, e.lg)
	clk := &fakeClock{now: time.Now()}
	cfg := DefaultWorkerConfig()
	cfg.clock = clk
	pl, err := NewPlanner(DefaultPlannerConfig(), e.st, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(cfg, e.st, e.lg, h, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	w.SetPresence(direct.LocalPresence(func() *direct.Core { return core }))
	done := make(chan error, 4)
	go func() { done <- srv.Run(ctx) }()
	go func() { done <- e.lg.Consume(ctx, queue.TopicDirect, queue.GroupGateway, core.Handle) }()
	go func() { done <- pl.Run(ctx) }()
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range 4 {
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
		}
	})
	dcfgR := DefaultDeferralsConfig()
	dcfgR.clock = clk
	dr, err := NewDeferrals(dcfgR, e.st, h, nil, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	dr.SetPresence(direct.LocalPresence(func() *direct.Core { return core }))
	r := &realQuotaRig{e: e, clk: clk, vivo: vs, dr: dr}
	url := "ws://" + srv.Addr().String() + "/1.1/connect"
	for i := range online {
		l := sim.NewLedger()
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
		dev, _, err := sim.DialDeviceAt(dctx, url, sim.DeviceConfig{AppID: testApp, AppKey: quotaAppKey, InstallationID: fmt.Sprintf("vq-%d", i), Ledger: l})
		dcancel()
		if err != nil {
			t.Fatalf("dial vq-%d: %v", i, err)
		}
		t.Cleanup(dev.Close)
		r.ledgers = append(r.ledgers, l)
	}
	waitfor.True(t, 60*time.Second, "the gateway to know the devices connected", func() bool {
		for i := range online {
			if !core.Online(testApp, fmt.Sprintf("vq-%d", i)) {
				return false
			}
		}
		return true
	})
	return r
}

func (r *realQuotaRig) untilReset() time.Duration {
	now := r.clk.Now()
	_, end := push.QuotaWindow(now, push.ChinaTime)
	return end.Sub(now) + time.Second
}

func (r *realQuotaRig) push(exp time.Duration) push.Notification {
	job := r.e.submit(push.Job{Where: json.RawMessage(`{"channels":"vq"}`), ExpiresAt: r.clk.Now().Add(exp)})
	return r.e.waitDone(job.NotificationObjectID)
}

func (r *realQuotaRig) tick(t *testing.T) {
	t.Helper()
	for {
		n, err := r.dr.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// vivoTimes counts the simulator's deliveries per registration id of devices [lo, hi).
func (r *realQuotaRig) vivoTimes(lo, hi int) (once, more int) {
	st := r.vivo.Stats()
	for i := lo; i < hi; i++ {
		switch n := st.PerToken[quotaRegID(i)]; {
		case n == 1:
			once++
		case n > 1:
			more++
		}
	}
	return once, more
}

// quotaScale is the scenario (quota 500, 2,000 devices) or, in -short, a tenth.
func quotaScale() (devices int, quota int64) {
	if testing.Short() {
		return 200, 50
	}
	return 2000, 500
}

// TestQuotaScenarioRealOwnFirst is the quota scenario on real parts under own_first:
// the connected half gets the push over the own channel (each device once, acked), vivo gets
// the quota's worth, the rest is deferred and reaches vivo after the injected day rolls over;
// nothing reaches vivo twice, and the record's funnel holds at each step.
func TestQuotaScenarioRealOwnFirst(t *testing.T) {
	n, quota := quotaScale()
	r := newRealQuotaRig(t, n, n/2, quota, push.PolicyOwnFirst)
	rec := r.push(48 * time.Hour)
	checkFunnelPending(t, rec.Counts)
	if v := rec.Counts[push.ChannelVivo]; v.Targets != int64(n/2) || v.Sent != quota || v.Deferred != int64(n/2)-quota {
		t.Fatalf("vivo %+v after fan-out: want %d targets, %d sent, %d deferred", v, n/2, quota, int64(n/2)-quota)
	}
	if d := rec.Counts[push.ChannelDirect]; d.Targets != int64(n/2) {
		t.Fatalf("own channel %+v: want %d targets", d, n/2)
	}
	if once, more := r.vivoTimes(n/2, n); once != int(quota) || more != 0 {
		t.Fatalf("vivo reached %d devices once, %d more than once: want %d once", once, more, quota)
	}
	if once, _ := r.vivoTimes(0, n/2); once != 0 {
		t.Fatalf("vivo reached %d connected devices, want 0", once)
	}
	waitfor.True(t, 60*time.Second, "every connected device to get the push once", func() bool {
		for _, l := range r.ledgers {
			if l.Times(rec.ObjectID) != 1 {
				return false
			}
		}
		return true
	})
	r.clk.advance(r.untilReset())
	r.tick(t)
	if once, more := r.vivoTimes(n/2, n); once != n/2 || more != 0 {
		t.Fatalf("after the day rolled over vivo reached %d devices once, %d more: want all %d once", once, more, n/2)
	}
	rec = r.e.record(rec.ObjectID)
	checkFunnelPending(t, rec.Counts)
	if v := rec.Counts[push.ChannelVivo]; v.Sent != int64(n/2) || v.Deferred != 0 {
		t.Fatalf("vivo %+v after the re-drive: want %d sent, 0 deferred", v, n/2)
	}
	for i, l := range r.ledgers {
		if l.Times(rec.ObjectID) != 1 {
			t.Fatalf("connected device %d got the push %d times", i, l.Times(rec.ObjectID))
		}
	}
}

// TestQuotaScenarioRealVendor: the same push under the vendor policy sends the quota's worth
// and defers the rest; a push that expires before the day rolls over sends none of its
// deferred targets after its expiry (they end expired).
func TestQuotaScenarioRealVendor(t *testing.T) {
	n, quota := quotaScale()
	r := newRealQuotaRig(t, n, 0, quota, push.PolicyVendor)
	reset := r.untilReset()
	rec := r.push(reset - time.Second/2) // expires half a second before the quota day ends
	if v := rec.Counts[push.ChannelVivo]; v.Targets != int64(n) || v.Sent != quota || v.Deferred != int64(n)-quota {
		t.Fatalf("vivo %+v: want %d sent, %d deferred", v, quota, int64(n)-quota)
	}
	r.clk.advance(reset)
	r.tick(t)
	rec = r.e.record(rec.ObjectID)
	checkFunnelPending(t, rec.Counts)
	if v := rec.Counts[push.ChannelVivo]; v.Sent != quota || v.Expired != int64(n)-quota || v.Deferred != 0 {
		t.Fatalf("vivo %+v after the push expired: want %d sent, the %d deferred expired", v, quota, int64(n)-quota)
	}
	if st := r.vivo.Stats(); st.Accepted != quota {
		t.Fatalf("vivo accepted %d, want %d (none after the push expired)", st.Accepted, quota)
	}
}

// checkFunnelPending checks targets = sent + failed + expired + invalid + deferred + pending
// on the vendor channels; the own channel's sent come from its gateway (pending until then).
func checkFunnelPending(t *testing.T, c push.Counts) {
	t.Helper()
	for ch, v := range c {
		if ch == push.ChannelDirect {
			if v.Sent+v.Failed+v.Expired+v.Deferred > v.Targets {
				t.Errorf("%s: %+v: more ended than targets", ch, v)
			}
			continue
		}
		if v.Targets != v.Sent+v.Failed+v.Expired+v.InvalidTokens+v.Deferred {
			t.Errorf("%s: %+v: targets != sent + failed + expired + invalid + deferred", ch, v)
		}
	}
}
