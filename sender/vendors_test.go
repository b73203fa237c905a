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
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/mi"
)

// vendorEnv is a dispatcher whose vendor drivers talk to their simulators over TLS.
type vendorEnv struct {
	hms *sim.HMS
	mi  *sim.Mi
	*env
}

func newVendorEnv(t *testing.T, tune func(*Config)) *vendorEnv {
	t.Helper()
	hs, err := sim.NewHMS(sim.HMSConfig{Record: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Close() })
	ms, err := sim.NewMi(sim.MiConfig{Record: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Close() })
	e := &vendorEnv{hms: hs, mi: ms, env: &env{apps: &apps{}, inv: &invalidations{}, clock: &clock{t: time.Now()}, sl: &sleeps{}, set: metrics.NewSet()}}
	cfg := Config{
		Workers:     64,
		IdleTimeout: time.Minute,
		HMS:         hms.Config{Endpoint: hs.URL(), TokenURL: hs.TokenURL(), TLS: hs.ClientTLS()},
		Mi:          mi.Config{Endpoint: ms.URL(), TLS: ms.ClientTLS()},
		sleep:       e.sl.sleep,
		now:         e.clock.now,
	}
	if tune != nil {
		tune(&cfg)
	}
	e.d = New(cfg, e.apps, e.inv, zap.NewNop(), e.set)
	t.Cleanup(e.d.Close)
	return e
}

// hmsCreds makes HMS apps in the simulator for each profile name (app ids 1000, 1001, ...)
// and returns the app's credentials JSON.
func (e *vendorEnv) hmsCreds(profiles ...string) json.RawMessage {
	m := map[string]hms.ProfileJSON{}
	for i, p := range profiles {
		id := fmt.Sprint(1000 + i)
		m[p] = hms.ProfileJSON{AppID: id, AppSecret: e.hms.NewApp(id)}
	}
	b, _ := json.Marshal(m)
	return b
}

func hmsToken(i int) string { return fmt.Sprintf("IQAAAACy0tok%06d", i) }

var hmsMessage = &push.Message{Channel: push.ChannelHMS, Body: []byte(`{"alert":"hi","title":"t"}`)}

func hmsDelivery(app string, i int, profile string) push.Delivery {
	return push.Delivery{
		AppID: app, NotificationID: "n1", Message: hmsMessage,
		Target: push.Target{ObjectID: fmt.Sprintf("h%d", i), Channel: push.ChannelHMS, DeviceType: "android", DeviceID: hmsToken(i), Profile: profile},
	}
}

// TestSenderHybridProfiles: each deviceProfile is sent with its own HMS app's credentials
// ("" means _default); a profile the app has not configured fails its target with a reason
// naming it, and sends nothing.
func TestSenderHybridProfiles(t *testing.T) {
	e := newVendorEnv(t, nil)
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelHMS: e.hmsCreds("_default", "beta")}})
	ds := []push.Delivery{hmsDelivery("app1", 0, ""), hmsDelivery("app1", 1, "beta"), hmsDelivery("app1", 2, "gamma"), hmsDelivery("app1", 3, "_default")}
	res := send(t, e.d, ds)
	for i, want := range []push.Outcome{push.OutcomeSent, push.OutcomeSent, push.OutcomeFailed, push.OutcomeSent} {
		if res[i].Outcome != want {
			t.Fatalf("delivery %d: %+v, want %v", i, res[i], want)
		}
	}
	if want := `hybrid push configuration "gamma" of vendor hms is not configured for this app`; res[2].Reason != want {
		t.Fatalf("reason %q, want %q", res[2].Reason, want)
	}
	byApp := map[string]string{}
	for _, s := range e.hms.Sent() {
		for _, tok := range strings.Split(s.Target, ",") {
			byApp[tok] = s.Project
		}
	}
	if byApp[hmsToken(0)] != "1000" || byApp[hmsToken(3)] != "1000" || byApp[hmsToken(1)] != "1001" || byApp[hmsToken(2)] != "" {
		t.Fatalf("tokens sent by HMS app: %v", byApp)
	}

	// An app without _default fails its profile-less targets the same way.
	e.apps.set(push.App{ID: "app2", Credentials: map[string]json.RawMessage{push.ChannelHMS: e.hmsCreds("beta")}})
	res = send(t, e.d, []push.Delivery{hmsDelivery("app2", 5, "")})
	if res[0].Outcome != push.OutcomeFailed || !strings.Contains(res[0].Reason, `"_default" of vendor hms is not configured`) {
		t.Fatalf("no _default: %+v", res[0])
	}
}

// TestSenderHMSDeadTokensGuard: HMS's "all tokens invalid" deletes installations through the
// same path and ratio guard as APNs and FCM: a burst of them for every token of an app stops
// the deletions after InvalidGuard.
func TestSenderHMSDeadTokensGuard(t *testing.T) {
	e := newVendorEnv(t, func(c *Config) { c.InvalidGuard = 5 })
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelHMS: e.hmsCreds("_default")}})
	ds := make([]push.Delivery, 20)
	for i := range ds {
		e.hms.MarkInvalid(hmsToken(i))
		ds[i] = hmsDelivery("app1", i, "")
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

// TestSenderHMSRetryAndAuth: a 503 with Retry-After is retried after the wait; an expired
// access token is replaced once and the delivery still goes out.
func TestSenderHMSRetryAndAuth(t *testing.T) {
	e := newVendorEnv(t, nil)
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelHMS: e.hmsCreds("_default")}})
	e.hms.Inject(1, sim.Fault{Status: 503, RetryAfter: 3 * time.Second})
	if res := send(t, e.d, []push.Delivery{hmsDelivery("app1", 0, "")}); res[0].Outcome != push.OutcomeSent {
		t.Fatalf("after 503: %+v", res[0])
	}
	if e.sl.max() < 3*time.Second {
		t.Fatalf("longest wait %v, want the Retry-After of 3s", e.sl.max())
	}
	e.hms.ExpireAccessTokens()
	if res := send(t, e.d, []push.Delivery{hmsDelivery("app1", 1, "")}); res[0].Outcome != push.OutcomeSent {
		t.Fatalf("after token expiry: %+v", res[0])
	}
	if st := e.hms.Stats(); st.AuthTokens != 2 || st.ByReason["80200003"] != 1 {
		t.Fatalf("auth tokens %d, 80200003 answers %d; want 2 and 1", st.AuthTokens, st.ByReason["80200003"])
	}
}

// TestSenderMiProfiles: Xiaomi deliveries go out with their profile's secret and package, many
// regIds per request; a missing profile fails with its name; a wrong secret stops the pool.
func TestSenderMiProfiles(t *testing.T) {
	e := newVendorEnv(t, nil)
	creds, _ := json.Marshal(map[string]mi.ProfileJSON{
		"_default": {AppSecret: e.mi.NewApp("com.a"), PackageName: "com.a"},
		"beta":     {AppSecret: e.mi.NewApp("com.b"), PackageName: "com.b"},
	})
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelMi: creds}})
	msg := &push.Message{Channel: push.ChannelMi, Body: []byte(`{"alert":"hi"}`)}
	ds := make([]push.Delivery, 41)
	for i := range ds {
		profile := ""
		if i%2 == 1 {
			profile = "beta"
		}
		if i == 40 {
			profile = "gamma"
		}
		ds[i] = push.Delivery{AppID: "app1", Message: msg, Target: push.Target{ObjectID: fmt.Sprint(i), Channel: push.ChannelMi, DeviceID: fmt.Sprintf("miReg%03d", i), Profile: profile}}
	}
	res := send(t, e.d, ds)
	for i, r := range res[:40] {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	if !strings.Contains(res[40].Reason, `"gamma" of vendor mi is not configured`) {
		t.Fatalf("missing profile: %+v", res[40])
	}
	pkgOf := map[string]string{}
	for _, s := range e.mi.Sent() {
		for _, id := range strings.Split(s.Target, ",") {
			pkgOf[id] = s.Project
		}
	}
	for i := range 40 {
		want := "com.a"
		if i%2 == 1 {
			want = "com.b"
		}
		if pkgOf[fmt.Sprintf("miReg%03d", i)] != want {
			t.Fatalf("regId %d sent for %q, want %q", i, pkgOf[fmt.Sprintf("miReg%03d", i)], want)
		}
	}
	if st := e.mi.Stats(); st.Accepted != 40 {
		t.Fatalf("accepted %d, want 40", st.Accepted)
	}

	bad, _ := json.Marshal(map[string]mi.ProfileJSON{"_default": {AppSecret: "wrong", PackageName: "com.a"}})
	e.apps.set(push.App{ID: "app2", Credentials: map[string]json.RawMessage{push.ChannelMi: bad}})
	res = send(t, e.d, []push.Delivery{{AppID: "app2", Message: msg, Target: push.Target{Channel: push.ChannelMi, DeviceID: "x1"}}})
	if res[0].Outcome != push.OutcomeFailed || !strings.HasPrefix(res[0].Reason, "credentials rejected: mi 21301") {
		t.Fatalf("wrong secret: %+v", res[0])
	}
}
