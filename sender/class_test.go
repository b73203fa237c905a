package sender

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/vendor"
)

// classMessage renders data for channel as a push of class, as fan-out does.
func classMessage(t *testing.T, channel, class, data string) *push.Message {
	t.Helper()
	m, err := render.Render(json.RawMessage(data), channel, render.Options{MessageClass: class, NotificationID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// classDeliveries are two deliveries of m to app1, token(0) and token(1).
func classDeliveries(m *push.Message, token func(int) string) []push.Delivery {
	ds := vendorDeliveries(2, m.Channel, "", time.Time{}, "c", token)
	for i := range ds {
		ds[i].Message = m
	}
	return ds
}

func allSent(t *testing.T, res []push.Result) {
	t.Helper()
	for i, r := range res {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
}

// lastBody is the body of the simulator's last accepted request.
func lastBody(t *testing.T, sent []sim.Sent) string {
	t.Helper()
	if len(sent) == 0 {
		t.Fatal("the simulator accepted no request")
	}
	return string(sent[len(sent)-1].Body)
}

// TestSenderMessageClassOnTheWire: each vendor receives the push's message class in its own
// classification fields (gateways.md §8a), over real HTTP against its simulator, which checks
// them as the vendor does: vivo classification 1/0, HMS android.category MARKETING, Honor
// importance NORMAL/LOW, OPPO category MARKETING with notify_level 2 or the profile's private
// channel, Xiaomi extra.channel_id from the profile's channels. data.<vendor> fields win.
func TestSenderMessageClassOnTheWire(t *testing.T) {
	const hi = `{"alert":"hi","title":"t"}`
	t.Run("vivo", func(t *testing.T) {
		e := newVivoEnv(t, sim.VivoConfig{Record: 10}, nil)
		for _, c := range []struct{ class, data, want string }{
			{push.ClassSystem, hi, `"classification":1`},
			{push.ClassMarketing, hi, `"classification":0`},
			{"", hi, `"classification":1`},
			// data.vivo's category decides: no classification from the class beside it.
			{push.ClassMarketing, `{"alert":"hi","vivo":{"category":"IM"}}`, `"category":"IM"`},
		} {
			allSent(t, send(t, e.d, classDeliveries(classMessage(t, push.ChannelVivo, c.class, c.data), vivoRegID)))
			if b := lastBody(t, e.sim.Sent()); !strings.Contains(b, c.want) || (strings.Contains(c.data, "category") && strings.Contains(b, "classification")) {
				t.Errorf("class %q data %s: body %s, want %s", c.class, c.data, b, c.want)
			}
		}
	})
	t.Run("hms", func(t *testing.T) {
		e := newVendorEnv(t, nil)
		e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelHMS: e.hmsCreds("_default")}})
		for _, c := range []struct {
			class    string
			category string
		}{{push.ClassMarketing, "MARKETING"}, {push.ClassSystem, ""}} {
			allSent(t, send(t, e.d, classDeliveries(classMessage(t, push.ChannelHMS, c.class, hi), hmsToken)))
			var req struct {
				Message struct {
					Android struct {
						Category string `json:"category"`
					} `json:"android"`
				} `json:"message"`
			}
			if err := json.Unmarshal([]byte(lastBody(t, e.hms.Sent())), &req); err != nil || req.Message.Android.Category != c.category {
				t.Errorf("class %s: android.category %q, %v; want %q", c.class, req.Message.Android.Category, err, c.category)
			}
		}
	})
	t.Run("honor", func(t *testing.T) {
		e := newHonorEnv(t, sim.HonorConfig{Record: 10}, nil)
		for _, c := range []struct{ class, data, want string }{
			{push.ClassSystem, hi, `"importance":"NORMAL"`},
			{push.ClassMarketing, hi, `"importance":"LOW"`},
			{push.ClassMarketing, `{"alert":"hi","honor":{"importance":"NORMAL"}}`, `"importance":"NORMAL"`},
		} {
			allSent(t, send(t, e.d, classDeliveries(classMessage(t, push.ChannelHonor, c.class, c.data), honorToken)))
			if b := lastBody(t, e.sim.Sent()); !strings.Contains(b, c.want) {
				t.Errorf("class %s data %s: body %s, want %s", c.class, c.data, b, c.want)
			}
		}
	})
	t.Run("oppo", func(t *testing.T) {
		e := &oppoEnv{env: newClockEnv()}
		s, err := sim.NewOppo(sim.OppoConfig{Record: 10, RequireChannel: true, Now: e.clock.now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		e.sim = s
		key, secret := s.NewApp()
		e.startVendor(t, Config{Oppo: oppo.Config{Endpoint: s.URL(), IntlEndpoint: s.URL(), TLS: s.ClientTLS(), Now: e.clock.now}}, nil, push.ChannelOppo,
			map[string]oppo.ProfileJSON{"_default": {AppKey: key, MasterSecret: secret, Channels: vendor.ClassChannels{System: "im_private", Marketing: "promo"}}})
		for _, c := range []struct {
			class, data string
			want        []string
			not         string
		}{
			{push.ClassSystem, hi, []string{`"channel_id":"im_private"`}, `"category"`},
			{push.ClassMarketing, hi, []string{`"channel_id":"promo"`, `"category":"MARKETING"`, `"notify_level":2`}, ""},
			// The push's own notification channel wins over the profile's.
			{push.ClassMarketing, `{"alert":"hi","_notificationChannel":"deals"}`, []string{`"channel_id":"deals"`}, ""},
		} {
			allSent(t, send(t, e.d, classDeliveries(classMessage(t, push.ChannelOppo, c.class, c.data), oppoRegID)))
			b := lastBody(t, e.sim.Sent())
			for _, w := range c.want {
				if !strings.Contains(b, w) {
					t.Errorf("class %s: body %s, want %s", c.class, b, w)
				}
			}
			if c.not != "" && strings.Contains(b, c.not) {
				t.Errorf("class %s: body %s has %s", c.class, b, c.not)
			}
		}
	})
	t.Run("mi", func(t *testing.T) {
		e := newVendorEnv(t, nil)
		creds, _ := json.Marshal(map[string]mi.ProfileJSON{"_default": {AppSecret: e.mi.NewApp("com.a"), PackageName: "com.a",
			Channels: vendor.ClassChannels{System: "private_im", Marketing: "public_promo"}}})
		e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{push.ChannelMi: creds}})
		for _, c := range []struct{ class, want string }{{push.ClassSystem, "private_im"}, {push.ClassMarketing, "public_promo"}} {
			allSent(t, send(t, e.d, classDeliveries(classMessage(t, push.ChannelMi, c.class, hi), func(i int) string { return "miReg" + string(rune('a'+i)) })))
			f, err := url.ParseQuery(lastBody(t, e.mi.Sent()))
			if err != nil || f.Get("extra.channel_id") != c.want {
				t.Errorf("class %s: extra.channel_id %q, %v; want %q", c.class, f.Get("extra.channel_id"), err, c.want)
			}
		}
	})
}

// TestSenderMessageClassVivoMismatchRefused: the vivo simulator refuses a category that
// contradicts the classification (10097) as vivo does, so a mapping that wrote both from
// different sources could not pass the wire test unseen.
func TestSenderMessageClassVivoMismatchRefused(t *testing.T) {
	e := newVivoEnv(t, sim.VivoConfig{}, nil)
	body := `{"alert":"hi","params":{"classification":0,"category":"IM"}}`
	res := send(t, e.d, vendorDeliveries(1, push.ChannelVivo, body, time.Time{}, "v", vivoRegID))
	if res[0].Outcome != push.OutcomeFailed || !strings.Contains(res[0].Reason, "10097") {
		t.Fatalf("vivo category mismatch: %+v, want failed 10097", res[0])
	}
}
