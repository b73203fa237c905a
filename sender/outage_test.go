package sender

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// fakeGateway is a driver whose every client answers with reply; it records when requests came.
type fakeGateway struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration // request times since start
	reply func(n int) gateway.Reply
}

func (f *fakeGateway) load([]byte) (credentials, error) { return fakeCreds{f}, nil }

type fakeCreds struct{ f *fakeGateway }

func (fakeCreds) Route(*push.Delivery) (string, error) { return "fake", nil }
func (c fakeCreds) newClient(string) (client, error)   { return fakeClient(c), nil }

type fakeClient struct{ f *fakeGateway }

func (c fakeClient) Send(ctx context.Context, _ *push.Delivery) gateway.Reply {
	if ctx.Err() != nil {
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "canceled"}
	}
	c.f.mu.Lock()
	n := len(c.f.at)
	c.f.at = append(c.f.at, time.Since(c.f.start))
	c.f.mu.Unlock()
	return c.f.reply(n)
}

func (fakeClient) Close() {}

func (f *fakeGateway) requests() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.at...)
}

// outageEnv is a dispatcher whose apns channel is f, on the real clock (fake under synctest).
func outageEnv(t *testing.T, f *fakeGateway, tune func(*Config)) (*Dispatcher, *metrics.Set) {
	t.Helper()
	f.start = time.Now()
	cfg := Config{Workers: 4, BaseBackoff: time.Second, MaxBackoff: 8 * time.Second, DownAfter: 3,
		drivers: map[string]driver{push.ChannelAPNs: f}}
	if tune != nil {
		tune(&cfg)
	}
	set := metrics.NewSet()
	a := &apps{}
	a.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{"apns": json.RawMessage(`{}`)}})
	d := New(cfg, a, nil, zap.NewNop(), set)
	t.Cleanup(d.Close)
	return d, set
}

func deliveries(n int) []push.Delivery {
	ds := make([]push.Delivery, n)
	for i := range ds {
		ds[i] = apnsDelivery("app1", i)
	}
	return ds
}

func gauge(set *metrics.Set, name string) string {
	var b strings.Builder
	set.WritePrometheus(&b)
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, name+" ") {
			return strings.TrimPrefix(l, name+" ")
		}
	}
	return "absent"
}

var unavailable = gateway.Reply{Kind: gateway.KindRetry, Reason: "ServiceUnavailable"}

// During a 60 s outage the pool parks its deliveries and sends one probe at a time, spaced by
// the backoff; when a probe gets through, every parked delivery is sent: nothing fails.
func TestSenderOutageParksAndProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const outage = 60 * time.Second
		f := &fakeGateway{}
		f.reply = func(int) gateway.Reply {
			if time.Since(f.start) < outage {
				return unavailable
			}
			return gateway.Reply{Kind: gateway.KindSent}
		}
		d, set := outageEnv(t, f, nil)
		go func() {
			time.Sleep(outage / 2)
			synctest.Wait()
			if got := gauge(set, `pushd_sender_gateways_down{channel="apns"}`); got != "1" {
				t.Errorf("mid-outage: gateways down %s, want 1", got)
			}
			if got := gauge(set, `pushd_sender_parked{channel="apns"}`); got == "0" {
				t.Error("mid-outage: no delivery parked")
			}
		}()
		res := send(t, d, deliveries(40))
		took := time.Since(f.start)
		for i, r := range res {
			if r.Outcome != push.OutcomeSent {
				t.Fatalf("delivery %d: %+v", i, r)
			}
		}
		var failed []time.Duration
		for _, at := range f.requests() {
			if at < outage {
				failed = append(failed, at)
			}
		}
		// 4 requests in flight when the outage began, then probes backing off 1s, 2s, 4s, 8s
		// (half of it jitter): about a dozen in 60 s, not 40 deliveries × their own retries.
		if len(failed) > 4+16 {
			t.Errorf("%d requests during the outage, want at most 20: %v", len(failed), failed)
		}
		for i := 5; i < len(failed); i++ {
			if gap := failed[i] - failed[i-1]; gap < 500*time.Millisecond {
				t.Errorf("probes %d and %d %s apart: want one at a time, at least half the 1s base backoff apart", i-1, i, gap)
			}
		}
		if took > outage+8*time.Second {
			t.Errorf("done %s after the start: more than one max backoff (8s) after the outage", took)
		}
		for name, want := range map[string]string{
			`pushd_sender_gateways_down{channel="apns"}`:         "0",
			`pushd_sender_parked{channel="apns"}`:                "0",
			`pushd_sender_gateway_outages_total{channel="apns"}`: "1",
		} {
			if got := gauge(set, name); got != want {
				t.Errorf("%s = %s, want %s", name, got, want)
			}
		}
	})
}

// A probe answered 429 with Retry-After waits that long before the next probe.
func TestSenderOutageProbeHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeGateway{}
		f.reply = func(n int) gateway.Reply {
			if n < 8 {
				return gateway.Reply{Kind: gateway.KindRetry, Reason: "TooManyRequests", RetryAfter: 20 * time.Second}
			}
			return gateway.Reply{Kind: gateway.KindSent}
		}
		d, _ := outageEnv(t, f, nil)
		send(t, d, deliveries(10))
		at := f.requests()
		for i := 5; i < 9; i++ { // after the 4 in flight at the start: probes
			if gap := at[i] - at[i-1]; gap < 20*time.Second {
				t.Fatalf("requests %d and %d %s apart, want >= the Retry-After of 20s: %v", i-1, i, gap, at)
			}
		}
	})
}

// Past the retry horizon the parked deliveries fail with the gateway's reason, and while the
// gateway stays down new deliveries fail at once instead of waiting another horizon.
func TestSenderOutageBeyondHorizonFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeGateway{reply: func(int) gateway.Reply { return unavailable }}
		d, set := outageEnv(t, f, func(c *Config) { c.RetryHorizon = 5 * time.Minute })
		res := send(t, d, deliveries(20))
		want := push.Result{Outcome: push.OutcomeFailed, Reason: "gateway unavailable for the retry horizon (5m0s): ServiceUnavailable"}
		for i, r := range res {
			if r != want {
				t.Fatalf("delivery %d: got %+v, want %+v", i, r, want)
			}
		}
		if took := time.Since(f.start); took < 5*time.Minute || took > 5*time.Minute+8*time.Second {
			t.Errorf("failed after %s, want the 5m horizon", took)
		}
		before := len(f.requests())
		start := time.Now()
		res = send(t, d, deliveries(20))
		for i, r := range res {
			if r != want {
				t.Fatalf("later delivery %d: got %+v, want %+v", i, r, want)
			}
		}
		if took, n := time.Since(start), len(f.requests())-before; took > 8*time.Second || n > 1 {
			t.Errorf("a delivery to a gateway down beyond the horizon took %s and %d requests, want at most one probe", took, n)
		}
		if got := gauge(set, `pushd_sender_deliveries_total{channel="apns",outcome="failed"}`); got != "40" {
			t.Errorf("failed deliveries counted %s, want 40", got)
		}
	})
}

// A delivery whose expiration comes during the outage is expired, not failed.
func TestSenderOutageExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeGateway{reply: func(int) gateway.Reply { return unavailable }}
		d, _ := outageEnv(t, f, nil)
		ds := deliveries(8)
		for i := range ds {
			m := *ds[i].Message
			m.Expiration = time.Now().Add(90 * time.Second)
			ds[i].Message = &m
		}
		res := send(t, d, ds)
		for i, r := range res {
			if r != (push.Result{Outcome: push.OutcomeExpired}) {
				t.Fatalf("delivery %d: got %+v, want expired", i, r)
			}
		}
		if took := time.Since(f.start); took > 90*time.Second {
			t.Errorf("expired after %s, want by the 90s expiration", took)
		}
	})
}

// Ending the Send call's context (a stopping fan-out) releases the parked deliveries at once;
// their results are not outcomes and nothing is counted.
func TestSenderOutageCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeGateway{reply: func(int) gateway.Reply { return unavailable }}
		d, set := outageEnv(t, f, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		err := d.Send(ctx, deliveries(20), make([]push.Result, 20))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 30*time.Second {
			t.Fatalf("Send returned %v after %s, want the context's end at 30s", err, time.Since(start))
		}
		synctest.Wait()
		for name, want := range map[string]string{
			`pushd_sender_parked{channel="apns"}`:                            "0",
			`pushd_sender_queued{channel="apns"}`:                            "0",
			`pushd_sender_deliveries_total{channel="apns",outcome="failed"}`: "0",
		} {
			if got := gauge(set, name); got != want {
				t.Errorf("%s = %s, want %s", name, got, want)
			}
		}
	})
}

// Over the real HTTP/2 client and the simulator: an outage of 503s, dropped connections,
// GOAWAYs and 429s with Retry-After loses no delivery and costs few requests. It runs on the
// wall clock with short backoffs; each phase lasts until the pool has parked and probed.
func TestSenderOutageSimulatorLosesNothing(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Workers = 16
		c.BaseBackoff, c.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
		c.sleep, c.now = sleep, time.Now
	}, sim.APNsConfig{})
	const n = 300
	ds := make([]push.Delivery, n)
	for i := range ds {
		ds[i] = apnsDelivery("app1", i)
	}
	for i, r := range send(t, e.d, ds[:20]) { // connections up, credentials proven
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("before the outage, delivery %d: %+v", i, r)
		}
	}
	phases := []sim.Outage{
		{Mode: sim.OutageStatus, For: time.Hour},
		{Mode: sim.OutageDrop, For: time.Hour},
		{Mode: sim.OutageGoAway, For: time.Hour},
		{Mode: sim.OutageStatus, Status: 429, RetryAfter: time.Second, For: time.Hour},
	}
	res := make([]push.Result, n-20)
	sent := make(chan error, 1)
	for i, ph := range phases {
		from := e.apns.Stats().Outage
		if err := e.apns.StartOutage(ph); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			go func() { sent <- e.d.Send(context.Background(), ds[20:], res) }()
		}
		waitfor.True(t, 20*time.Second, "the pool to park and probe in phase "+string(ph.Mode), func() bool {
			return gauge(e.set, `pushd_sender_parked{channel="apns"}`) != "0" && e.apns.Stats().Outage >= from+3
		})
	}
	e.apns.EndOutage()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", 20+i, r)
		}
	}
	st := e.apns.Stats()
	for i := range n {
		if c := st.PerToken[apnsToken(i)]; c != 1 {
			t.Fatalf("token %d accepted %d times, want 1", i, c)
		}
	}
	t.Logf("outage: %d requests met it for %d deliveries; by reason %v", st.Outage, n-20, st.ByReason)
	if st.Outage > 100 {
		t.Errorf("%d requests during the outage: want about the 16 in flight at its start plus a few probes per phase", st.Outage)
	}
	if got := gauge(e.set, `pushd_sender_gateways_down{channel="apns"}`); got != "0" {
		t.Errorf("gateways down %s after the outage", got)
	}
}
