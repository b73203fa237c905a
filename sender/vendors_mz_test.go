package sender

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/mz"
)

// newMzEnv is a dispatcher whose Meizu driver talks to its simulator over TLS.
func newMzEnv(t *testing.T, tune func(*Config)) (*env, *sim.Mz) {
	t.Helper()
	s, err := sim.NewMz(sim.MzConfig{Record: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	e := &env{apps: &apps{}, inv: &invalidations{}, clock: &clock{t: time.Now()}, sl: &sleeps{}, set: metrics.NewSet()}
	cfg := Config{
		Workers:     64,
		IdleTimeout: time.Minute,
		Mz:          mz.Config{Endpoint: s.URL(), TLS: s.ClientTLS()},
		sleep:       e.sl.sleep,
		now:         e.clock.now,
	}
	if tune != nil {
		tune(&cfg)
	}
	e.d = New(cfg, e.apps, e.inv, zap.NewNop(), e.set)
	t.Cleanup(e.d.Close)
	return e, s
}

// mzTestCreds makes a Meizu app in the simulator for each profile name.
func mzTestCreds(s *sim.Mz, profiles ...string) (json.RawMessage, map[string]string) {
	m, ids := map[string]mz.ProfileJSON{}, map[string]string{}
	for _, p := range profiles {
		id, secret := s.NewApp()
		m[p], ids[p] = mz.ProfileJSON{AppID: json.Number(id), AppSecret: secret}, id
	}
	b, _ := json.Marshal(m)
	return b, ids
}

var mzMessage = &push.Message{Channel: push.ChannelMz, Body: []byte(`{"alert":"hi","title":"t"}`)}

func mzPushID(i int) string { return fmt.Sprintf("RFAKEmz%05d", i) }

func mzDelivery(app string, i int, profile string) push.Delivery {
	return push.Delivery{
		AppID: app, NotificationID: "n1", Message: mzMessage,
		Target: push.Target{ObjectID: fmt.Sprintf("z%d", i), Channel: push.ChannelMz, DeviceType: "android", DeviceID: mzPushID(i), Profile: profile},
	}
}

// TestSenderMzProfilesAndDrops: Meizu deliveries go out signed with their profile's app,
// many pushIds per request; the pushIds Meizu names unsubscribed delete their installations;
// a missing profile fails with its name; a busy answer is retried; a wrong secret stops the
// pool with the signature error.
func TestSenderMzProfilesAndDrops(t *testing.T) {
	e, s := newMzEnv(t, nil)
	creds, ids := mzTestCreds(s, "_default", "beta")
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelMz: creds}})
	ds := make([]push.Delivery, 41)
	for i := range ds {
		profile := ""
		if i%2 == 1 {
			profile = "beta"
		}
		if i == 40 {
			profile = "gamma"
		}
		if i%10 == 3 {
			s.MarkInvalid(mzPushID(i))
		}
		ds[i] = mzDelivery("app1", i, profile)
	}
	res := send(t, e.d, ds)
	for i, r := range res[:40] {
		want := push.OutcomeSent
		if i%10 == 3 {
			want = push.OutcomeInvalidToken
		}
		if r.Outcome != want {
			t.Fatalf("delivery %d: %+v, want %v", i, r, want)
		}
	}
	if !strings.Contains(res[40].Reason, `"gamma" of vendor mz is not configured`) {
		t.Fatalf("missing profile: %+v", res[40])
	}
	if got := e.inv.got(); len(got) != 4 {
		t.Fatalf("invalidated %v, want the 4 unsubscribed pushIds", got)
	}
	appOf := map[string]string{}
	for _, sent := range s.Sent() {
		for _, id := range strings.Split(sent.Target, ",") {
			appOf[id] = sent.Project
		}
	}
	for i := range 40 {
		want := ids["_default"]
		if i%2 == 1 {
			want = ids["beta"]
		}
		if i%10 != 3 && appOf[mzPushID(i)] != want {
			t.Fatalf("pushId %d sent by app %q, want %q", i, appOf[mzPushID(i)], want)
		}
	}
	if st := s.Stats(); st.Accepted != 36 || st.Requests >= 36 {
		t.Fatalf("accepted %d in %d requests, want 36 in batches", st.Accepted, st.Requests)
	}

	s.Inject(1, sim.Fault{Reason: sim.MzBusy})
	if res := send(t, e.d, []push.Delivery{mzDelivery("app1", 100, "")}); res[0].Outcome != push.OutcomeSent {
		t.Fatalf("after 1003: %+v", res[0])
	}

	bad, _ := json.Marshal(map[string]mz.ProfileJSON{"_default": {AppID: json.Number(ids["_default"]), AppSecret: "wrong"}})
	e.apps.set(push.App{ID: "app2", Credentials: map[string]json.RawMessage{push.ChannelMz: bad}})
	res = send(t, e.d, []push.Delivery{mzDelivery("app2", 101, "")})
	if res[0].Outcome != push.OutcomeFailed || !strings.HasPrefix(res[0].Reason, "credentials rejected: mz 1006") {
		t.Fatalf("wrong secret: %+v", res[0])
	}
}

// TestSenderMzDeadTokensGuard: Meizu's unsubscribed answers go through the same ratio guard
// as APNs and FCM: a burst of them for every pushId of an app stops the deletions.
func TestSenderMzDeadTokensGuard(t *testing.T) {
	e, s := newMzEnv(t, func(c *Config) { c.InvalidGuard = 5 })
	creds, _ := mzTestCreds(s, "_default")
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelMz: creds}})
	ds := make([]push.Delivery, 20)
	for i := range ds {
		s.MarkInvalid(mzPushID(i))
		ds[i] = mzDelivery("app1", i, "")
	}
	res := send(t, e.d, ds)
	deleted, guarded := 0, 0
	for i, r := range res {
		switch {
		case r.Outcome == push.OutcomeInvalidToken:
			deleted++
		case r.Outcome == push.OutcomeFailed && strings.Contains(r.Reason, "not deleted"):
			guarded++
		default:
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	if deleted != 5 || guarded != 15 || len(e.inv.got()) != 5 {
		t.Fatalf("deleted %d (invalidated %d), guarded %d; want 5, 15", deleted, len(e.inv.got()), guarded)
	}
}
