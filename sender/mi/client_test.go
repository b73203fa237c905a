package mi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

func newSim(t testing.TB, cfg sim.MiConfig) *sim.Mi {
	t.Helper()
	s, err := sim.NewMi(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func regID(i int) string { return fmt.Sprintf("fakeRegId%06d", i) }

const pkg = "com.example.chat"

var notif = &push.Message{Channel: push.ChannelMi, Body: []byte(`{"title":"Ana","alert":"See you at 8?","notificationChannel":"chat","notificationId":"n42","custom":{"conv":"42"}}`)}

func delivery(m *push.Message, id string) *push.Delivery {
	return &push.Delivery{AppID: "app1", Message: m, Target: push.Target{ObjectID: "o", Channel: push.ChannelMi, DeviceID: id}}
}

func newClient(t testing.TB, s *sim.Mi, secret string, cfg Config) *Client {
	t.Helper()
	raw, _ := json.Marshal(map[string]ProfileJSON{"_default": {AppSecret: secret, PackageName: pkg}})
	c, err := Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Endpoint, cfg.TLS = s.URL(), s.ClientTLS()
	cl, err := c.NewClient("profile/_default", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestMiClientOutcomes: every class of Xiaomi answer, over TLS against the simulator, and the
// form as received.
func TestMiClientOutcomes(t *testing.T) {
	s := newSim(t, sim.MiConfig{Record: 10})
	cl := newClient(t, s, s.NewApp(pkg), Config{})
	cases := []struct {
		name   string
		msg    *push.Message
		inject *sim.Fault
		want   gateway.Kind
		reason string
	}{
		{"sent", notif, nil, gateway.KindSent, ""},
		{"http 503", notif, &sim.Fault{Status: 503, RetryAfter: 2 * time.Second}, gateway.KindRetry, "status 503"},
		{"http 500", notif, &sim.Fault{Status: 500}, gateway.KindRetry, "status 500"},
		{"other code", notif, &sim.Fault{Reason: "22001"}, gateway.KindFailed, "mi 22001"},
		{"pass-through", &push.Message{Channel: push.ChannelMi, Body: []byte(`{"alert":"x","silent":true}`)}, nil, gateway.KindSent, ""},
		{"not a vendor body", &push.Message{Channel: push.ChannelMi, Body: []byte(`[]`)}, nil, gateway.KindFailed, "not a vendor body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.inject != nil {
				s.Inject(1, *c.inject)
			}
			r := cl.Send(context.Background(), delivery(c.msg, regID(0)))
			if r.Kind != c.want || !strings.Contains(r.Reason, c.reason) {
				t.Fatalf("got %v %q, want %v containing %q", r.Kind, r.Reason, c.want, c.reason)
			}
		})
	}
	f, err := url.ParseQuery(string(s.Sent()[0].Body))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"registration_id": regID(0), "restricted_package_name": pkg, "pass_through": "0", "title": "Ana",
		"description": "See you at 8?", "payload": `{"conv":"42"}`, "notify_type": "-1", "extra.notify_effect": "1", "extra.channel_id": "chat"}
	for k, v := range want {
		if f.Get(k) != v {
			t.Errorf("%s = %q, want %q (form %s)", k, f.Get(k), v, s.Sent()[0].Body)
		}
	}
	if f.Get("notify_id") == "" {
		t.Error("no notify_id")
	}

	// A wrong secret stops the pool (FIX credentials).
	bad := newClient(t, s, "wrong==", Config{})
	if r := bad.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "21301") {
		t.Fatalf("wrong secret: %+v", r)
	}
}

// TestMiClientBatches: concurrent deliveries of one message share requests of at most
// BatchSize regIds; each regId is delivered once; a day quota answer fails (FIX), not deleted.
func TestMiClientBatches(t *testing.T) {
	s := newSim(t, sim.MiConfig{DayQuota: 150})
	cl := newClient(t, s, s.NewApp(pkg), Config{BatchSize: 40, Concurrency: 1})
	const n = 120
	replies := make([]gateway.Reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); replies[i] = cl.Send(context.Background(), delivery(notif, regID(i))) }()
	}
	wg.Wait()
	for i, r := range replies {
		if r.Kind != gateway.KindSent {
			t.Fatalf("regId %d: %+v", i, r)
		}
	}
	st := s.Stats()
	if st.Accepted != n || cl.Targets() != n || cl.Requests() > n/2 || st.Requests != cl.Requests() {
		t.Fatalf("accepted %d in %d requests (client %d requests, %d targets)", st.Accepted, st.Requests, cl.Requests(), cl.Targets())
	}
	for i := range n {
		if st.PerToken[regID(i)] != 1 {
			t.Fatalf("regId %d delivered %d times", i, st.PerToken[regID(i)])
		}
	}
	// 30 left of the day quota: a batch of 40 is refused with the quota code, QUOTA.
	over := make([]gateway.Reply, 40)
	for i := range over {
		wg.Add(1)
		go func() { defer wg.Done(); over[i] = cl.Send(context.Background(), delivery(notif, regID(1000+i))) }()
	}
	wg.Wait()
	parked := 0
	for _, r := range over {
		if r.Kind == gateway.KindQuota && strings.Contains(r.Reason, fmt.Sprint(sim.MiDefaultQuotaCode)) {
			parked++
		}
	}
	if parked == 0 {
		t.Fatalf("no delivery answered quota on the day quota: %+v", over[0])
	}
}
