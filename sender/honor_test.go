package sender

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/honor"
)

// honorEnv is a dispatcher whose honor driver talks to the Honor simulator over TLS, on a
// clock the simulator, the client and the dispatcher's waits share (see vivoEnv).
type honorEnv struct {
	sim *sim.Honor
	*env
}

func newHonorEnv(t *testing.T, cfg sim.HonorConfig, tune func(*Config)) *honorEnv {
	t.Helper()
	e := &honorEnv{env: newClockEnv()}
	cfg.Now = e.clock.now
	s, err := sim.NewHonor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	e.sim = s
	c := Config{Honor: honor.Config{Endpoint: s.URL(), TokenURL: s.TokenURL(), TLS: s.ClientTLS(), Now: e.clock.now,
		QuotaCodes: []string{strconv.Itoa(sim.HonorDefaultQuotaCode)}}}
	id, secret := s.NewApp("104455667")
	e.startVendor(t, c, tune, push.ChannelHonor, map[string]honor.ProfileJSON{"_default": {AppID: "104455667", ClientID: id, ClientSecret: secret}})
	return e
}

func honorToken(i int) string { return fmt.Sprintf("AQAAAACy0honor%07d", i) }

func honorDeliveries(n int, exp time.Time) []push.Delivery {
	return vendorDeliveries(n, push.ChannelHonor, `{"alert":"hi","title":"t"}`, exp, "h", honorToken)
}

// TestSenderHonorDelivers: honor targets are delivered (they failed "channel honor not
// available" before the driver), each token once, batched.
func TestSenderHonorDelivers(t *testing.T) {
	e := newHonorEnv(t, sim.HonorConfig{}, nil)
	res := send(t, e.d, honorDeliveries(300, time.Time{}))
	for i, r := range res {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	st := e.sim.Stats()
	if st.Accepted != 300 || st.Requests >= 300 {
		t.Fatalf("accepted %d in %d requests: want 300, batched", st.Accepted, st.Requests)
	}
	for i := range 300 {
		if st.PerToken[honorToken(i)] != 1 {
			t.Fatalf("token %d delivered %d times", i, st.PerToken[honorToken(i)])
		}
	}
}

// TestSenderHonorDeadTokensGuard: Honor's dead tokens (expireTokens, 80300007) delete
// installations through the same path and ratio guard as APNs and FCM.
func TestSenderHonorDeadTokensGuard(t *testing.T) {
	e := newHonorEnv(t, sim.HonorConfig{Knobs: sim.Knobs{InvalidTokenRate: 1}}, func(c *Config) { c.InvalidGuard = 5 })
	e.checkDeadTokenGuard(t, send(t, e.d, honorDeliveries(40, time.Time{})), "honor")
}

// TestSenderHonorQuota: past the day quota the app+vendor is parked: deliveries without
// expiration go out on the next (China) day, each token once; deliveries whose push expires
// first fail with the quota's reason.
func TestSenderHonorQuota(t *testing.T) {
	e := newHonorEnv(t, sim.HonorConfig{DayQuota: 25}, func(c *Config) { c.Workers = 1 })
	res := send(t, e.d, honorDeliveries(60, time.Time{}))
	for i, r := range res {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	code := strconv.Itoa(sim.HonorDefaultQuotaCode)
	st := e.sim.Stats()
	if st.ByReason[code] == 0 || st.Accepted != 60 {
		t.Fatalf("accepted %d, %s answers %d: want 60 accepted after quota answers", st.Accepted, code, st.ByReason[code])
	}
	for i := range 60 {
		if st.PerToken[honorToken(i)] != 1 {
			t.Fatalf("token %d delivered %d times", i, st.PerToken[honorToken(i)])
		}
	}
	if got := gauge(e.set, `pushd_sender_quota_parks_total{channel="honor"}`); got == "0" {
		t.Fatal("no quota park counted")
	}

	e.sim.Inject(1, sim.Fault{Reason: code})
	before := e.sim.Stats().Requests
	res = send(t, e.d, honorDeliveries(10, e.clock.now().Add(time.Hour)))
	for i, r := range res {
		if r.Outcome != push.OutcomeFailed || !strings.Contains(r.Reason, "daily quota exceeded") {
			t.Fatalf("expiring delivery %d: %+v", i, r)
		}
	}
	if n := e.sim.Stats().Requests - before; n > 1 {
		t.Fatalf("%d requests while the quota was spent, want 1", n)
	}
}

// TestSenderHonorOutageLosesNothing: an Honor outage of 503s with Retry-After, dropped
// connections and 81000001 answers loses no delivery and costs few requests (wall clock,
// short backoffs; each phase lasts until the pool has parked and probed).
func TestSenderHonorOutageLosesNothing(t *testing.T) {
	e := newHonorEnv(t, sim.HonorConfig{}, func(c *Config) {
		c.BaseBackoff, c.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
		c.sleep, c.now = sleep, time.Now
		c.Honor.Now = time.Now
	})
	const n = 300
	ds := honorDeliveries(n, time.Time{})
	for i, r := range send(t, e.d, ds[:20]) {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("before the outage, delivery %d: %+v", i, r)
		}
	}
	phases := []sim.Outage{
		{Mode: sim.OutageStatus, Status: 503, RetryAfter: time.Second, For: time.Hour},
		{Mode: sim.OutageDrop, For: time.Hour},
		{Mode: sim.OutageStatus, Status: 500, Reason: "81000001", For: time.Hour},
	}
	res := make([]push.Result, n-20)
	sent := make(chan error, 1)
	for i, ph := range phases {
		from := e.sim.Stats().Outage
		if err := e.sim.StartOutage(ph); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			go func() { sent <- e.d.Send(context.Background(), ds[20:], res) }()
		}
		waitfor.True(t, 20*time.Second, "the pool to park and probe in phase "+string(ph.Mode), func() bool {
			return gauge(e.set, `pushd_sender_parked{channel="honor"}`) != "0" && e.sim.Stats().Outage >= from+3
		})
	}
	e.sim.EndOutage()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", 20+i, r)
		}
	}
	st := e.sim.Stats()
	for i := range n {
		if c := st.PerToken[honorToken(i)]; c != 1 {
			t.Fatalf("token %d accepted %d times, want 1", i, c)
		}
	}
	if st.Outage > 100 {
		t.Errorf("%d requests during the outage: want the ones in flight at its start plus a few probes per phase", st.Outage)
	}
}

// TestSenderHonorDefaultRate: Honor pools are paced to Honor's 3,000 messages/s per app unless
// --sender-rates says otherwise.
func TestSenderHonorDefaultRate(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.rate("app1", push.ChannelHonor) != 3000 {
		t.Fatalf("default honor rate %v", c.rate("app1", push.ChannelHonor))
	}
	c = Config{Rates: map[string]float64{"app1/honor": 10000}}.WithDefaults()
	if c.rate("app1", push.ChannelHonor) != 10000 || c.rate("app2", push.ChannelHonor) != 3000 {
		t.Fatalf("rates %v", c.Rates)
	}
}
