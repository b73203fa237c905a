package oppo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

func newSim(t testing.TB, cfg sim.OppoConfig) *sim.Oppo {
	t.Helper()
	s, err := sim.NewOppo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func regID(i int) string { return fmt.Sprintf("CN_078ad8b8a137cadb14ae5b70cf8%05d", i) }

var notif = &push.Message{Channel: push.ChannelOppo, Body: []byte(`{"title":"Ana","alert":"See you at 8?","notificationChannel":"chat","custom":{"conv":"42"},"params":{"category":"IM","notify_level":2}}`)}

func msgOf(body string) *push.Message {
	return &push.Message{Channel: push.ChannelOppo, Body: []byte(body)}
}

func delivery(m *push.Message, id string) *push.Delivery {
	return &push.Delivery{AppID: "app1", Message: m, Target: push.Target{ObjectID: "o", Channel: push.ChannelOppo, DeviceID: id}}
}

func newClient(t testing.TB, s *sim.Oppo, key, secret string, cfg Config) *Client {
	t.Helper()
	raw, _ := json.Marshal(map[string]ProfileJSON{"_default": {AppKey: key, MasterSecret: secret}})
	c, err := Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = s.URL()
	}
	if cfg.TLS == nil {
		cfg.TLS = s.ClientTLS()
	}
	if cfg.InvalidRegIDCodes == nil {
		cfg.InvalidRegIDCodes = []int{sim.OppoDefaultInvalidCode, sim.OppoDefaultUnsubscribedCode}
	}
	cl, err := c.NewClient("profile/_default", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func sendAll(cl *Client, m *push.Message, ids []string) []gateway.Reply {
	out := make([]gateway.Reply, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = cl.Send(context.Background(), delivery(m, id)) }()
	}
	wg.Wait()
	return out
}

// TestOppoClientOutcomes: every class of OPPO answer to a unicast, over TLS against the
// simulator, and the message as OPPO receives it.
func TestOppoClientOutcomes(t *testing.T) {
	s := newSim(t, sim.OppoConfig{Record: 10, RequireChannel: true})
	key, secret := s.NewApp()
	s.MarkInvalid(regID(1), false)
	s.MarkInvalid(regID(2), true)
	cl := newClient(t, s, key, secret, Config{})
	cases := []struct {
		name   string
		msg    *push.Message
		reg    string
		inject *sim.Fault
		want   gateway.Kind
		reason string
	}{
		{"sent", notif, regID(0), nil, gateway.KindSent, ""},
		{"invalid regId", notif, regID(1), nil, gateway.KindInvalidToken, "oppo 10000"},
		{"unsubscribed regId", notif, regID(2), nil, gateway.KindInvalidToken, "oppo 10001"},
		{"no channel", msgOf(`{"alert":"x"}`), regID(0), nil, gateway.KindFailed, "oppo 40"},
		{"bad category", msgOf(`{"alert":"x","notificationChannel":"c","params":{"category":"LOTTERY"}}`), regID(0), nil, gateway.KindFailed, "oppo 67"},
		{"long text", msgOf(`{"alert":"` + strings.Repeat("長", 90) + `","notificationChannel":"c"}`), regID(0), nil, gateway.KindSent, ""},
		{"service unavailable", notif, regID(0), &sim.Fault{Reason: "-1"}, gateway.KindRetry, "oppo -1"},
		{"flow control", notif, regID(0), &sim.Fault{Reason: "-2"}, gateway.KindRetry, "oppo -2"},
		{"call frequency", notif, regID(0), &sim.Fault{Reason: "55"}, gateway.KindRetry, "oppo 55"},
		{"http 502", notif, regID(0), &sim.Fault{Status: 502}, gateway.KindRetry, "status 502"},
		{"daily limit", notif, regID(0), &sim.Fault{Reason: "33"}, gateway.KindQuota, "oppo 33"},
		{"app disabled", notif, regID(0), &sim.Fault{Reason: "28"}, gateway.KindCredentials, "oppo 28"},
		{"missing token", notif, regID(0), &sim.Fault{Reason: "29"}, gateway.KindFailed, "oppo 29"},
		{"unknown business code", notif, regID(0), &sim.Fault{Reason: "12345"}, gateway.KindFailed, "oppo 12345"},
		{"no alert", msgOf(`{"alert":""}`), regID(0), nil, gateway.KindFailed, "needs a notification text"},
		{"silent", msgOf(`{"alert":"x","silent":true}`), regID(0), nil, gateway.KindFailed, "not a vendor body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.inject != nil {
				s.Inject(1, *c.inject)
			}
			r := cl.Send(context.Background(), delivery(c.msg, c.reg))
			if r.Kind != c.want || !strings.Contains(r.Reason, c.reason) {
				t.Fatalf("got %v %q, want %v containing %q", r.Kind, r.Reason, c.want, c.reason)
			}
		})
	}
	var got struct {
		TargetType   int            `json:"target_type"`
		TargetValue  string         `json:"target_value"`
		Notification map[string]any `json:"notification"`
	}
	if err := json.Unmarshal(s.Sent()[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"title": "Ana", "content": "See you at 8?", "style": 1.0, "click_action_type": 0.0, "off_line": true,
		"off_line_ttl": 864000.0, "channel_id": "chat", "action_parameters": `{"conv":"42"}`, "category": "IM", "notify_level": 2.0}
	if got.TargetType != 2 || got.TargetValue != regID(0) {
		t.Errorf("target %d %q", got.TargetType, got.TargetValue)
	}
	for k, v := range want {
		if fmt.Sprint(got.Notification[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v (message %s)", k, got.Notification[k], v, s.Sent()[0].Body)
		}
	}
	if st := s.Stats(); st.AuthTokens != 1 || cl.TokensMinted() != 1 {
		t.Errorf("tokens issued %d, minted %d: want one cached auth_token", st.AuthTokens, cl.TokensMinted())
	}
}

// TestOppoClientAuth: a wrong secret or app key stops the pool; a skewed clock is refused
// (19); an expired auth_token is refused (11), dropped, and the next request authenticates
// again; a token is renewed once it is TokenRefresh old.
func TestOppoClientAuth(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newSim(t, sim.OppoConfig{Now: clock})
	key, secret := s.NewApp()
	if r := newClient(t, s, key, "nope", Config{}).Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "oppo 16") {
		t.Errorf("wrong secret: %+v, want credentials 16", r)
	}
	if r := newClient(t, s, "nope", secret, Config{}).Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "oppo 14") {
		t.Errorf("wrong key: %+v, want credentials 14", r)
	}
	skewed := newClient(t, s, key, secret, Config{Now: func() time.Time { return clock().Add(-11 * time.Minute) }})
	if r := skewed.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "oppo 19") {
		t.Errorf("skewed clock: %+v, want 19", r)
	}

	cl := newClient(t, s, key, secret, Config{Now: clock})
	if r := cl.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindSent {
		t.Fatalf("first send: %+v", r)
	}
	s.ExpireTokens()
	if r := cl.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindAuth {
		t.Fatalf("expired token: %+v, want auth", r)
	}
	if r := cl.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindSent || cl.TokensMinted() != 2 {
		t.Fatalf("after refusal: %+v with %d tokens minted, want sent with 2", r, cl.TokensMinted())
	}
	mu.Lock()
	now = now.Add(61 * time.Minute)
	mu.Unlock()
	if r := cl.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindSent || cl.TokensMinted() != 3 {
		t.Fatalf("after an hour: %+v with %d tokens minted, want sent with 3", r, cl.TokensMinted())
	}
	if n := s.Stats().ByReason["11"]; n != 1 {
		t.Fatalf("%d tokens refused, want only the expired one", n)
	}
}

// TestOppoClientBatches: concurrent deliveries of one message go out as unicast_batch
// requests of at most BatchSize messages with one rendered notification; each regId is
// delivered once; dead regIds get their own outcome per item; regIds of other regions go to
// the overseas host.
func TestOppoClientBatches(t *testing.T) {
	cn := newSim(t, sim.OppoConfig{Record: 100})
	intl := newSim(t, sim.OppoConfig{Region: "intl", Record: 100})
	key, secret := cn.NewApp()
	intl.AddApp(key, secret)
	cn.MarkInvalid(regID(5), true)
	cn.MarkInvalid(regID(6), false)
	trust := cn.ClientTLS()
	trust.RootCAs.AppendCertsFromPEM(intl.CertPEM())
	cl := newClient(t, cn, key, secret, Config{IntlEndpoint: intl.URL(), TLS: trust, BatchSize: 40, Concurrency: 1})
	const n = 120
	ids := make([]string, n)
	for i := range ids {
		ids[i] = regID(i)
		if i%10 == 9 {
			ids[i] = fmt.Sprintf("OPPO_SG_%020d", i) // overseas
		}
	}
	replies := sendAll(cl, notif, ids)
	for i, r := range replies {
		want := gateway.KindSent
		if i == 5 || i == 6 {
			want = gateway.KindInvalidToken
		}
		if r.Kind != want {
			t.Fatalf("regId %d: %+v, want %v", i, r, want)
		}
	}
	cs, is := cn.Stats(), intl.Stats()
	if cs.Accepted != n-n/10-2 || is.Accepted != n/10 || cl.Targets() != n || cl.Requests() > n/2 {
		t.Fatalf("accepted cn %d intl %d (client %d requests, %d targets)", cs.Accepted, is.Accepted, cl.Requests(), cl.Targets())
	}
	for i, id := range ids {
		if got := cs.PerToken[id] + is.PerToken[id]; i != 5 && i != 6 && got != 1 {
			t.Fatalf("regId %d delivered %d times", i, got)
		}
	}
	// One batch request, parsed: every message carries the same notification.
	for _, sent := range cn.Sent() {
		var ms []struct {
			Notification json.RawMessage `json:"notification"`
		}
		if json.Unmarshal(sent.Body, &ms) != nil || len(ms) < 2 {
			continue
		}
		for _, m := range ms[1:] {
			if string(m.Notification) != string(ms[0].Notification) {
				t.Fatalf("batch messages differ: %s vs %s", m.Notification, ms[0].Notification)
			}
		}
		return
	}
	t.Fatal("no unicast_batch request recorded")
}

// TestOppoClientQuotaRateOutage: the daily limit answers QUOTA for a whole batch; the QPS
// limit is flow control (RETRY after a second); a scripted outage is RETRY until it ends.
func TestOppoClientQuotaRateOutage(t *testing.T) {
	s := newSim(t, sim.OppoConfig{DayQuota: 30})
	key, secret := s.NewApp()
	cl := newClient(t, s, key, secret, Config{BatchSize: 40, Concurrency: 1})
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = regID(i)
	}
	var sent, quota int
	for _, r := range sendAll(cl, notif, ids) {
		switch r.Kind {
		case gateway.KindSent:
			sent++
		case gateway.KindQuota:
			quota++
		default:
			t.Fatalf("got %+v", r)
		}
	}
	if sent == 0 || quota == 0 || sent > 30 {
		t.Fatalf("sent %d, quota %d: want the day limit of 30 to answer 33 once spent", sent, quota)
	}

	limited := newSim(t, sim.OppoConfig{TokensPerSecond: 1})
	k2, s2 := limited.NewApp()
	cl2 := newClient(t, limited, k2, s2, Config{})
	if r := cl2.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindSent {
		t.Fatalf("first within the rate: %+v", r)
	}
	if r := cl2.Send(context.Background(), delivery(notif, regID(1))); r.Kind != gateway.KindRetry || r.RetryAfter != time.Second || !strings.Contains(r.Reason, "-2") {
		t.Fatalf("beyond the rate: %+v, want retry after 1s (-2)", r)
	}

	if err := limited.StartOutage(sim.Outage{Mode: sim.OutageDrop, For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if r := cl2.Send(context.Background(), delivery(notif, regID(2))); r.Kind != gateway.KindRetry {
		t.Fatalf("dropped connection: %+v, want retry", r)
	}
	limited.EndOutage()
	if st := limited.Stats(); st.Outage != 1 {
		t.Fatalf("outage hits %d", st.Outage)
	}
}

func TestOppoRegion(t *testing.T) {
	for id, cn := range map[string]bool{"b6bbd94b59cdb5df8391642c1509b7fe": true, "CN_b6bb": true, "OPPO_CN_b6bb": true,
		"SG_b6bb": false, "OPPO_SG_b6bb": false, "a_b_c_d": false} {
		if RegionCN(id) != cn {
			t.Errorf("%s: china %v", id, !cn)
		}
	}
}
