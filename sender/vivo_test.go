package sender

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vivo"
)

// vivoEnv is a dispatcher whose vivo driver talks to the vivo simulator over TLS. The
// dispatcher's waits move the clock the simulator, the client and the dispatcher share, so a
// wait for the quota reset ends on the simulator's next day.
type vivoEnv struct {
	sim *sim.Vivo
	*env
}

func newVivoEnv(t *testing.T, cfg sim.VivoConfig, tune func(*Config)) *vivoEnv {
	t.Helper()
	e := &vivoEnv{env: newClockEnv()}
	cfg.Now = e.clock.now
	s, err := sim.NewVivo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	e.sim = s
	c := Config{Vivo: vivo.Config{Endpoint: s.URL(), TLS: s.ClientTLS(), Now: e.clock.now}}
	key, secret := s.NewApp("10004")
	e.startVendor(t, c, tune, push.ChannelVivo, map[string]vivo.ProfileJSON{"_default": {AppID: "10004", AppKey: key, AppSecret: secret}})
	return e
}

func vivoRegID(i int) string { return fmt.Sprintf("1563853541030200%07d", i) }

func vivoDeliveries(n int, exp time.Time) []push.Delivery {
	return vendorDeliveries(n, push.ChannelVivo, `{"alert":"hi","title":"t"}`, exp, "v", vivoRegID)
}

// TestSenderVivoDeadTokensGuard: vivo's 10302 (not found, unsubscribed) deletes installations
// through the same path and ratio guard as APNs and FCM, in single sends and pushToList lists.
func TestSenderVivoDeadTokensGuard(t *testing.T) {
	e := newVivoEnv(t, sim.VivoConfig{Knobs: sim.Knobs{InvalidTokenRate: 1}}, func(c *Config) { c.InvalidGuard = 5 })
	e.checkDeadTokenGuard(t, send(t, e.d, vivoDeliveries(40, time.Time{})), "vivo 10302")
}

// TestSenderVivoQuota: past vivo's day quota (10070) the app+vendor is parked: deliveries
// without expiration go out on vivo's next day, each regId once; deliveries whose push
// expires first fail with the quota's reason.
func TestSenderVivoQuota(t *testing.T) {
	// One worker: a wait moves the shared clock by a day, which must not fall between another
	// request's auth timestamp and its check.
	e := newVivoEnv(t, sim.VivoConfig{DayQuota: 25}, func(c *Config) { c.Workers = 1 })
	res := send(t, e.d, vivoDeliveries(60, time.Time{}))
	for i, r := range res {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	st := e.sim.Stats()
	if st.ByReason["10070"] == 0 || st.Accepted != 60 {
		t.Fatalf("accepted %d, 10070 answers %d: want 60 accepted after quota answers", st.Accepted, st.ByReason["10070"])
	}
	for i := range 60 {
		if st.PerToken[vivoRegID(i)] != 1 {
			t.Fatalf("regId %d delivered %d times", i, st.PerToken[vivoRegID(i)])
		}
	}
	if got := gauge(e.set, `pushd_sender_quota_parks_total{channel="vivo"}`); got == "0" {
		t.Fatal("no quota park counted")
	}

	// Spend today's quota, then a push that expires in an hour: its targets fail with the
	// quota's reason and reach vivo no more than the first refused request.
	e.sim.Inject(1, sim.Fault{Reason: "10070"})
	before := e.sim.Stats().Requests
	res = send(t, e.d, vivoDeliveries(10, e.clock.now().Add(time.Hour)))
	for i, r := range res {
		if r.Outcome != push.OutcomeFailed || !strings.Contains(r.Reason, "vivo 10070 daily quota exceeded") {
			t.Fatalf("expiring delivery %d: %+v", i, r)
		}
	}
	if n := e.sim.Stats().Requests - before; n > 1 {
		t.Fatalf("%d requests while the quota was spent, want 1", n)
	}
}
