package vivo

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

const appID = "10004"

func newSim(t testing.TB, cfg sim.VivoConfig) *sim.Vivo {
	t.Helper()
	s, err := sim.NewVivo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// regID is a 23-character vivo regId.
func regID(i int) string { return fmt.Sprintf("1563853541030100%07d", i) }

var notif = &push.Message{Channel: push.ChannelVivo, Body: []byte(`{"title":"Ana","alert":"See you at 8?","notificationId":"n42","custom":{"conv":"42","n":7},"params":{"classification":1,"category":"IM"}}`)}

func msgOf(body string) *push.Message {
	return &push.Message{Channel: push.ChannelVivo, Body: []byte(body)}
}

func delivery(m *push.Message, id string) *push.Delivery {
	return &push.Delivery{AppID: "app1", Message: m, Target: push.Target{ObjectID: "o", Channel: push.ChannelVivo, DeviceID: id}}
}

func newClient(t testing.TB, s *sim.Vivo, key, secret string, cfg Config) *Client {
	t.Helper()
	raw, _ := json.Marshal(map[string]ProfileJSON{"_default": {AppID: appID, AppKey: key, AppSecret: secret}})
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

// TestVivoClientOutcomes: every class of vivo answer to a single send, over TLS against the
// simulator, and the request as vivo receives it.
func TestVivoClientOutcomes(t *testing.T) {
	s := newSim(t, sim.VivoConfig{Record: 10})
	key, secret := s.NewApp(appID)
	s.MarkInvalid(regID(1), sim.VivoUserNotFound)
	s.MarkInvalid(regID(2), sim.VivoUserUnsubscribed)
	s.AddTestDevice(regID(3))
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
		{"not found", notif, regID(1), nil, gateway.KindInvalidToken, "10302 regId not found"},
		{"unsubscribed", notif, regID(2), nil, gateway.KindInvalidToken, "10302 regId unsubscribed"},
		{"test mode, test device", msgOf(`{"alert":"t","params":{"pushMode":1}}`), regID(3), nil, gateway.KindSent, ""},
		{"test mode, other device", msgOf(`{"alert":"t","params":{"pushMode":1}}`), regID(0), nil, gateway.KindFailed, "not a test device"},
		{"bad category", msgOf(`{"alert":"t","params":{"category":"LOTTERY"}}`), regID(0), nil, gateway.KindFailed, "10096"},
		{"category mismatch", msgOf(`{"alert":"t","params":{"classification":0,"category":"IM"}}`), regID(0), nil, gateway.KindFailed, "10097"},
		{"http 500", notif, regID(0), &sim.Fault{Status: 500}, gateway.KindRetry, "status 500"},
		{"http 503", notif, regID(0), &sim.Fault{Status: 503, RetryAfter: 2 * time.Second}, gateway.KindRetry, "status 503"},
		{"day quota", notif, regID(0), &sim.Fault{Reason: "10070"}, gateway.KindQuota, "10070"},
		{"app mismatch", notif, regID(0), &sim.Fault{Reason: "10094"}, gateway.KindCredentials, "10094"},
		{"unknown code", notif, regID(0), &sim.Fault{Reason: "10111"}, gateway.KindFailed, "vivo 10111"},
		{"title empty", notif, regID(0), &sim.Fault{Reason: "10055"}, gateway.KindFailed, "10055"},
		{"no alert", msgOf(`{"alert":" "}`), regID(0), nil, gateway.KindFailed, "needs a notification text"},
		{"silent", msgOf(`{"alert":"x","silent":true}`), regID(0), nil, gateway.KindFailed, "not a vendor body"},
		{"custom too long", msgOf(`{"alert":"x","custom":{"k":"` + strings.Repeat("v", 1100) + `"}}`), regID(0), nil, gateway.KindFailed, "1024"},
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
	var got map[string]any
	if err := json.Unmarshal(s.Sent()[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"appId": 10004.0, "regId": regID(0), "title": "Ana", "content": "See you at 8?", "notifyType": 4.0,
		"skipType": 1.0, "networkType": -1.0, "classification": 1.0, "category": "IM", "pushMode": 0.0, "timeToLive": 86400.0,
		"clientCustomMap": map[string]any{"conv": "42", "n": "7"}}
	for k, v := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v (body %s)", k, got[k], v, s.Sent()[0].Body)
		}
	}
	if id, _ := got["requestId"].(string); id == "" || got["notifyId"] == nil {
		t.Errorf("requestId %q notifyId %v", id, got["notifyId"])
	}
	if st := s.Stats(); st.AuthTokens != 1 || cl.TokensMinted() != 1 {
		t.Errorf("tokens issued %d, minted %d: want one cached authToken", st.AuthTokens, cl.TokensMinted())
	}
}

// TestVivoClientAuth: a wrong secret (sign) or appKey stops the pool; an expired token is
// refused (AUTH), dropped, and the next request authenticates again; a token is renewed once
// it is TokenRefresh old, without a refusal.
func TestVivoClientAuth(t *testing.T) {
	s := newSim(t, sim.VivoConfig{})
	key, secret := s.NewApp(appID)
	for name, c := range map[string]*Client{
		"wrong secret": newClient(t, s, key, "nope", Config{}),
		"wrong key":    newClient(t, s, "nope", secret, Config{}),
	} {
		if r := c.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "1020") {
			t.Errorf("%s: %+v, want credentials 10206/10202", name, r)
		}
	}
	skewed := newClient(t, s, key, secret, Config{})
	skewed.SetClock(func() time.Time { return time.Now().Add(-11 * time.Minute) })
	if r := skewed.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "10207") {
		t.Errorf("skewed clock: %+v, want 10207", r)
	}

	cl := newClient(t, s, key, secret, Config{TokenRefresh: time.Hour})
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
	// Renewal by age: on a shared clock an hour later the cached token is replaced unasked.
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s2 := newSim(t, sim.VivoConfig{Now: clock})
	key2, secret2 := s2.NewApp(appID)
	cl2 := newClient(t, s2, key2, secret2, Config{TokenRefresh: time.Hour})
	cl2.SetClock(clock)
	if r := cl2.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindSent {
		t.Fatalf("first send: %+v", r)
	}
	mu.Lock()
	now = now.Add(61 * time.Minute)
	mu.Unlock()
	if r := cl2.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindSent || cl2.TokensMinted() != 2 {
		t.Fatalf("after an hour: %+v with %d tokens minted, want sent with 2", r, cl2.TokensMinted())
	}
	if st := s2.Stats(); st.ByReason["10000"] != 0 {
		t.Fatalf("a token was refused before renewal: %v", st.ByReason)
	}
}

// TestVivoClientBatches: concurrent deliveries of one message go out as pushToList requests of
// at most BatchSize regIds over one saved payload; each regId is delivered once; invalid
// regIds in a list get their own outcome.
func TestVivoClientBatches(t *testing.T) {
	s := newSim(t, sim.VivoConfig{})
	key, secret := s.NewApp(appID)
	s.MarkInvalid(regID(5), sim.VivoUserUnsubscribed)
	s.MarkInvalid(regID(6), sim.VivoUserNotFound)
	cl := newClient(t, s, key, secret, Config{BatchSize: 40, Concurrency: 1})
	const n = 120
	ids := make([]string, n)
	for i := range ids {
		ids[i] = regID(i)
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
	st := s.Stats()
	if st.Accepted != n-2 || cl.Targets() != n || cl.Requests() > n/2 || st.Requests != cl.Requests() {
		t.Fatalf("accepted %d in %d requests (client %d requests, %d targets)", st.Accepted, st.Requests, cl.Requests(), cl.Targets())
	}
	if cl.Saves() != 1 {
		t.Fatalf("%d list payloads saved for one message, want 1", cl.Saves())
	}
	for i := range n {
		if want := int64(1); i != 5 && i != 6 && st.PerToken[regID(i)] != want {
			t.Fatalf("regId %d delivered %d times", i, st.PerToken[regID(i)])
		}
	}
}

// TestVivoClientQuotas: the day quota answers QUOTA for a whole list; a spent list-payload
// count (10252) sends batches as single sends for the rest of the day.
func TestVivoClientQuotas(t *testing.T) {
	s := newSim(t, sim.VivoConfig{DayQuota: 50, PayloadQuota: 1})
	key, secret := s.NewApp(appID)
	cl := newClient(t, s, key, secret, Config{BatchSize: 40, Concurrency: 1})
	first := make([]string, 30)
	for i := range first {
		first[i] = regID(i)
	}
	for i, r := range sendAll(cl, notif, first) {
		if r.Kind != gateway.KindSent {
			t.Fatalf("regId %d: %+v", i, r)
		}
	}
	// A second message: its list payload is refused (10252), so its regIds go one by one
	// until the day quota (50) answers 10070.
	second := msgOf(`{"alert":"again"}`)
	ids := make([]string, 30)
	for i := range ids {
		ids[i] = regID(100 + i)
	}
	sent, quota := 0, 0
	for _, r := range sendAll(cl, second, ids) {
		switch r.Kind {
		case gateway.KindSent:
			sent++
		case gateway.KindQuota:
			quota++
			if !strings.Contains(r.Reason, "10070") {
				t.Fatalf("quota reason %q", r.Reason)
			}
		default:
			t.Fatalf("got %+v", r)
		}
	}
	if sent != 20 || quota != 10 || cl.Saves() != 1 {
		t.Fatalf("sent %d, quota %d, saves %d; want 20, 10, 1", sent, quota, cl.Saves())
	}
}

// TestVivoClientOutage: while the simulator's scripted outage lasts every send is RETRY
// (status, dropped connection), and it sends again after.
func TestVivoClientOutage(t *testing.T) {
	s := newSim(t, sim.VivoConfig{})
	key, secret := s.NewApp(appID)
	cl := newClient(t, s, key, secret, Config{})
	for _, o := range []sim.Outage{{Mode: sim.OutageStatus, Status: 502, For: time.Hour}, {Mode: sim.OutageDrop, For: time.Hour}} {
		if err := s.StartOutage(o); err != nil {
			t.Fatal(err)
		}
		if r := cl.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindRetry {
			t.Fatalf("%s outage: %+v, want retry", o.Mode, r)
		}
	}
	s.EndOutage()
	if r := cl.Send(context.Background(), delivery(notif, regID(0))); r.Kind != gateway.KindSent {
		t.Fatalf("after the outage: %+v", r)
	}
	if st := s.Stats(); st.Outage != 2 {
		t.Fatalf("outage hits %d, want 2", st.Outage)
	}
}

// TestVivoClientDayQuotaOnSave: a day-quota answer (10070) to saveListPayload is QUOTA for the
// whole batch, not the list-payload count (10252): batches still go as list pushes afterwards.
func TestVivoClientDayQuotaOnSave(t *testing.T) {
	s := newSim(t, sim.VivoConfig{})
	key, secret := s.NewApp(appID)
	cl := newClient(t, s, key, secret, Config{})
	m := msgOf(`{"alert":"q"}`)
	ds := []*push.Delivery{delivery(m, regID(0)), delivery(m, regID(1))}
	out := make([]gateway.Reply, 2)
	s.Inject(1, sim.Fault{Reason: "10070"}) // the batch's first request: saveListPayload
	cl.sendBatch(context.Background(), m, ds, out)
	for i, r := range out {
		if r.Kind != gateway.KindQuota || !strings.Contains(r.Reason, "10070") {
			t.Fatalf("delivery %d: %+v, want quota 10070", i, r)
		}
	}
	if !cl.listAllowed() {
		t.Fatal("a day-quota answer turned list pushes off")
	}
	cl.sendBatch(context.Background(), m, ds, out)
	if out[0].Kind != gateway.KindSent || out[1].Kind != gateway.KindSent || cl.Saves() != 1 {
		t.Fatalf("next batch %+v with %d saves, want sent by a list push", out, cl.Saves())
	}
}
