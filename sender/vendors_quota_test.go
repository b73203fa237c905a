package sender

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/mz"
)

// quotaVendor is one vendor simulator with a day quota, behind a dispatcher whose waits move
// the clock the simulator and the dispatcher share (a wait for the quota reset ends on the
// simulator's next China day).
type quotaVendor struct {
	channel  string
	reason   string // the vendor's quota code, as the failed targets' reason names it
	delivery func(i int, exp time.Time) push.Delivery
	token    func(i int) string
	stats    func() sim.Stats
	inject   func() // scripts one quota answer
}

func newClockedEnv(t *testing.T, tune func(*Config)) *env {
	t.Helper()
	e := &env{apps: &apps{}, inv: &invalidations{}, clock: &clock{t: time.Date(2026, 3, 4, 2, 0, 0, 0, time.UTC)}, set: metrics.NewSet()}
	c := Config{
		Workers:     1, // a wait moves the shared clock: keep one request at a time
		IdleTimeout: time.Minute,
		sleep: func(ctx context.Context, d time.Duration) error {
			e.clock.add(d)
			return ctx.Err()
		},
		now: e.clock.now,
	}
	tune(&c)
	e.d = New(c, e.apps, e.inv, zap.NewNop(), e.set)
	t.Cleanup(e.d.Close)
	return e
}

func newMiQuota(t *testing.T, quota int64) (*env, quotaVendor) {
	var s *sim.Mi
	var e *env
	e = newClockedEnv(t, func(c *Config) {
		var err error
		s, err = sim.NewMi(sim.MiConfig{DayQuota: quota, Now: func() time.Time { return e.clock.now() }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		c.Mi = mi.Config{Endpoint: s.URL(), TLS: s.ClientTLS()}
	})
	creds, _ := json.Marshal(map[string]mi.ProfileJSON{"_default": {AppSecret: s.NewApp("com.a"), PackageName: "com.a"}})
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelMi: creds}})
	token := func(i int) string { return fmt.Sprintf("miQuotaReg%05d", i) }
	return e, quotaVendor{
		channel: push.ChannelMi, reason: fmt.Sprint(sim.MiDefaultQuotaCode), token: token, stats: s.Stats,
		inject: func() { s.Inject(1, sim.Fault{Reason: fmt.Sprint(sim.MiDefaultQuotaCode)}) },
		delivery: func(i int, exp time.Time) push.Delivery {
			m := &push.Message{Channel: push.ChannelMi, Body: []byte(`{"alert":"hi","title":"t"}`), Expiration: exp}
			return push.Delivery{AppID: "app1", NotificationID: "n1", Message: m,
				Target: push.Target{ObjectID: fmt.Sprint("m", i), Channel: push.ChannelMi, DeviceType: "android", DeviceID: token(i)}}
		},
	}
}

func newMzQuota(t *testing.T, quota int64) (*env, quotaVendor) {
	var s *sim.Mz
	var e *env
	e = newClockedEnv(t, func(c *Config) {
		var err error
		s, err = sim.NewMz(sim.MzConfig{DayQuota: quota, Now: func() time.Time { return e.clock.now() }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		c.Mz = mz.Config{Endpoint: s.URL(), TLS: s.ClientTLS()}
	})
	creds, _ := mzTestCreds(s, "_default")
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelMz: creds}})
	return e, quotaVendor{
		channel: push.ChannelMz, reason: sim.MzDayLimit, token: mzPushID, stats: s.Stats,
		inject: func() { s.Inject(1, sim.Fault{Reason: sim.MzDayLimit}) },
		delivery: func(i int, exp time.Time) push.Delivery {
			d := mzDelivery("app1", i, "")
			d.Message = &push.Message{Channel: push.ChannelMz, Body: mzMessage.Body, Expiration: exp}
			return d
		},
	}
}

// TestSenderVendorQuotaParks: past Xiaomi's or Meizu's day quota (as vivo and OPPO in their
// own tests) the app+vendor is parked: deliveries without expiration go out on the vendor's
// next day, each regId once; deliveries whose push expires first fail with the quota's reason
// at the expiry, and only the first refused request reaches the vendor.
func TestSenderVendorQuotaParks(t *testing.T) {
	for name, mk := range map[string]func(*testing.T, int64) (*env, quotaVendor){"mi": newMiQuota, "mz": newMzQuota} {
		t.Run(name, func(t *testing.T) {
			e, v := mk(t, 25)
			const n = 60
			ds := make([]push.Delivery, n)
			for i := range ds {
				ds[i] = v.delivery(i, time.Time{})
			}
			start := e.clock.now()
			res := send(t, e.d, ds)
			for i, r := range res {
				if r.Outcome != push.OutcomeSent {
					t.Fatalf("delivery %d: %+v", i, r)
				}
			}
			st := v.stats()
			if st.ByReason[v.reason] == 0 || st.Accepted != n {
				t.Fatalf("accepted %d, %s answers %d: want %d accepted after quota answers", st.Accepted, v.reason, st.ByReason[v.reason], n)
			}
			for i := range n {
				if st.PerToken[v.token(i)] != 1 {
					t.Fatalf("target %d delivered %d times", i, st.PerToken[v.token(i)])
				}
			}
			if days := e.clock.now().Sub(start); days < 20*time.Hour {
				t.Fatalf("all sent within %v: the quota did not park the app until the next China day", days)
			}
			if got := gauge(e.set, fmt.Sprintf(`pushd_sender_quota_parks_total{channel=%q}`, v.channel)); got == "0" || got == "absent" {
				t.Fatalf("quota parks counted %q", got)
			}

			// The quota answered again, then a push that expires in an hour: its targets fail
			// with the quota's reason when it expires, after one refused request.
			v.inject()
			before := v.stats().Requests
			at := e.clock.now()
			exp := at.Add(time.Hour)
			ds = ds[:10]
			for i := range ds {
				ds[i] = v.delivery(100+i, exp)
			}
			res = send(t, e.d, ds)
			for i, r := range res {
				if r.Outcome != push.OutcomeFailed || !strings.Contains(r.Reason, v.reason) || !strings.Contains(r.Reason, "the push expired while the vendor's daily quota was spent") {
					t.Fatalf("expiring delivery %d: %+v", i, r)
				}
			}
			if got := e.clock.now(); got.Before(exp) {
				t.Fatalf("failed at %v, before the push expired at %v", got, exp)
			}
			if k := v.stats().Requests - before; k != 1 {
				t.Fatalf("%d requests while the quota was spent, want 1", k)
			}
		})
	}
}

// TestSenderVendorRateRetried: a vendor's flow-control answer is retried with backoff, not
// failed and not parked: Xiaomi's and HMS's HTTP 503 with Retry-After (their rate limit modes)
// and Meizu's 110010; every target then goes out exactly once.
func TestSenderVendorRateRetried(t *testing.T) {
	e := newVendorEnv(t, nil)
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelHMS: e.hmsCreds("_default")}})
	miCreds, _ := json.Marshal(map[string]mi.ProfileJSON{"_default": {AppSecret: e.mi.NewApp("com.a"), PackageName: "com.a"}})
	e.apps.set(push.App{ID: "app2", Credentials: map[string]json.RawMessage{push.ChannelMi: miCreds}})
	e.hms.Inject(2, sim.Fault{Status: 503, RetryAfter: 2 * time.Second})
	e.mi.Inject(2, sim.Fault{Status: 503, RetryAfter: 2 * time.Second})
	miMsg := &push.Message{Channel: push.ChannelMi, Body: []byte(`{"alert":"hi"}`)}
	ds := []push.Delivery{hmsDelivery("app1", 0, ""),
		{AppID: "app2", Message: miMsg, Target: push.Target{ObjectID: "m0", Channel: push.ChannelMi, DeviceID: "miRateReg0"}}}
	for i, r := range send(t, e.d, ds) {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d after 503s: %+v", i, r)
		}
	}
	if e.sl.max() < 2*time.Second {
		t.Fatalf("longest wait %v, want the Retry-After of 2s", e.sl.max())
	}
	if e.hms.Stats().Accepted != 1 || e.mi.Stats().Accepted != 1 {
		t.Fatalf("accepted hms %d, mi %d; want 1 each", e.hms.Stats().Accepted, e.mi.Stats().Accepted)
	}
	if got := gauge(e.set, `pushd_sender_quota_parks_total{channel="mi"}`); got != "absent" && got != "0" {
		t.Fatalf("a rate answer parked mi: %s", got)
	}

	me, ms := newMzEnv(t, nil)
	creds, _ := mzTestCreds(ms, "_default")
	me.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelMz: creds}})
	ms.Inject(2, sim.Fault{Reason: sim.MzTooFast})
	if r := send(t, me.d, []push.Delivery{mzDelivery("app1", 0, "")}); r[0].Outcome != push.OutcomeSent {
		t.Fatalf("mz after 110010: %+v", r[0])
	}
	if ms.Stats().ByReason[sim.MzTooFast] != 2 || ms.Stats().Accepted != 1 {
		t.Fatalf("mz 110010 answers %d, accepted %d; want 2, 1", ms.Stats().ByReason[sim.MzTooFast], ms.Stats().Accepted)
	}
}

// TestSenderExpiredWhileQuotaParked: a delivery of a push that expired before it reached its
// pool, while its app+vendor is parked on a spent quota, fails with the quota's reason instead
// of counting expired (it was held back by the quota, as the parked ones were); HeldReason
// says so for fan-out, and nothing for an app+vendor that is not parked.
func TestSenderExpiredWhileQuotaParked(t *testing.T) {
	e, v := newMiQuota(t, 1000)
	v.inject()
	exp := e.clock.now().Add(time.Hour)
	if r := send(t, e.d, []push.Delivery{v.delivery(0, exp)}); r[0].Outcome != push.OutcomeFailed || !strings.Contains(r[0].Reason, v.reason) {
		t.Fatalf("parked delivery: %+v", r[0])
	}
	late := v.delivery(1, e.clock.now().Add(-time.Second))
	r := send(t, e.d, []push.Delivery{late})
	if r[0].Outcome != push.OutcomeFailed || !strings.Contains(r[0].Reason, v.reason) || !strings.Contains(r[0].Reason, "the push expired while the vendor's daily quota was spent") {
		t.Fatalf("expired delivery while parked: %+v, want failed with the quota's reason", r[0])
	}
	if reason, held := e.d.HeldReason(context.Background(), &late); !held || !strings.Contains(reason, v.reason) {
		t.Fatalf("HeldReason = %q, %v", reason, held)
	}
	other := late
	other.AppID = "app2"
	if _, held := e.d.HeldReason(context.Background(), &other); held {
		t.Fatal("an app without a park is held")
	}
	if r := send(t, e.d, []push.Delivery{other}); r[0].Outcome == push.OutcomeSent {
		t.Fatalf("app2's expired delivery: %+v", r[0])
	}
	if n := v.stats().Requests; n != 1 {
		t.Fatalf("%d requests reached the vendor, want the one refused", n)
	}
}
