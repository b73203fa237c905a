package sender

import (
	"fmt"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/oppo"
)

// oppoEnv is a dispatcher whose OPPO driver talks to the OPPO simulator over TLS, on a clock
// the simulator, the client and the dispatcher's waits share (see vivoEnv).
type oppoEnv struct {
	sim *sim.Oppo
	*env
}

func newOppoEnv(t *testing.T, cfg sim.OppoConfig, tune func(*Config)) *oppoEnv {
	t.Helper()
	e := &oppoEnv{env: newClockEnv()}
	cfg.Now = e.clock.now
	s, err := sim.NewOppo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	e.sim = s
	c := Config{Oppo: oppo.Config{Endpoint: s.URL(), IntlEndpoint: s.URL(), TLS: s.ClientTLS(), Now: e.clock.now,
		InvalidRegIDCodes: []int{sim.OppoDefaultInvalidCode, sim.OppoDefaultUnsubscribedCode}}}
	key, secret := s.NewApp()
	e.startVendor(t, c, tune, push.ChannelOppo, map[string]oppo.ProfileJSON{"_default": {AppKey: key, MasterSecret: secret}})
	return e
}

func oppoRegID(i int) string { return fmt.Sprintf("CN_078ad8b8a137cadb14ae5b70cf9%05d", i) }

func oppoDeliveries(n int, exp time.Time) []push.Delivery {
	return vendorDeliveries(n, push.ChannelOppo, `{"alert":"hi","title":"t","notificationChannel":"c"}`, exp, "p", oppoRegID)
}

// TestSenderOppoDeadTokensGuard: OPPO's dead-regId codes (per batch item or unicast) delete
// installations through the same path and ratio guard as APNs and FCM.
func TestSenderOppoDeadTokensGuard(t *testing.T) {
	e := newOppoEnv(t, sim.OppoConfig{Knobs: sim.Knobs{InvalidTokenRate: 1}}, func(c *Config) { c.InvalidGuard = 5 })
	e.checkDeadTokenGuard(t, send(t, e.d, oppoDeliveries(40, time.Time{})), "oppo 10001")
}

// TestSenderOppoQuotaAndFlowControl: OPPO's flow control (−2) is retried after a second and
// loses nothing; past its daily limit (33) the app+vendor is parked until the next China day,
// each regId delivered once.
func TestSenderOppoQuotaAndFlowControl(t *testing.T) {
	e := newOppoEnv(t, sim.OppoConfig{DayQuota: 25}, func(c *Config) { c.Workers = 1 })
	e.sim.Inject(2, sim.Fault{Reason: "-2"})
	res := send(t, e.d, oppoDeliveries(60, time.Time{}))
	for i, r := range res {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	st := e.sim.Stats()
	if st.ByReason["33"] == 0 || st.ByReason["-2"] != 2 || st.Accepted != 60 {
		t.Fatalf("accepted %d, 33 answers %d, -2 answers %d", st.Accepted, st.ByReason["33"], st.ByReason["-2"])
	}
	for i := range 60 {
		if st.PerToken[oppoRegID(i)] != 1 {
			t.Fatalf("regId %d delivered %d times", i, st.PerToken[oppoRegID(i)])
		}
	}
	if got := gauge(e.set, `pushd_sender_quota_parks_total{channel="oppo"}`); got == "0" {
		t.Fatal("no quota park counted")
	}
}
