package mz

import (
	"context"
	"crypto/md5"
	"encoding/hex"
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

func newSim(t testing.TB, cfg sim.MzConfig) *sim.Mz {
	t.Helper()
	s, err := sim.NewMz(cfg)
	if err != nil {
		t.Fatalf("cannot start the mz simulator: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func pushID(i int) string { return fmt.Sprintf("RFAKEpushId%06d", i) }

var notif = &push.Message{Channel: push.ChannelMz, Body: []byte(`{"title":"Ana","alert":"See you at 8?","notificationId":"n42","custom":{"conv":"42"}}`)}

func delivery(m *push.Message, id string) *push.Delivery {
	return &push.Delivery{AppID: "app1", Message: m, Target: push.Target{ObjectID: "o", Channel: push.ChannelMz, DeviceID: id}}
}

// newClient returns the _default client of appID and secret against s.
func newClient(t testing.TB, s *sim.Mz, appID, secret string, cfg Config) *Client {
	t.Helper()
	raw, _ := json.Marshal(map[string]ProfileJSON{"_default": {AppID: json.Number(appID), AppSecret: secret}})
	c, err := Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	route, err := c.Route(delivery(notif, "x"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Endpoint, cfg.TLS = s.URL(), s.ClientTLS()
	cl, err := c.NewClient(route, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestMzSignature: the signature of gateways.md §5.1's example is the MD5 of the sorted raw
// parameters with the secret appended, and the simulator computes the same.
func TestMzSignature(t *testing.T) {
	mj := `{"noticeBarInfo":{"title":"Ana","content":"See you at 8?"},"pushTimeInfo":{"offLine":1,"validTime":24}}`
	f := url.Values{"appId": {"100999"}, "pushIds": {"RFAKEpushIdA,RFAKEpushIdB"}, "messageJson": {mj}, "sign": {"ignored"}}
	sum := md5.Sum([]byte("appId=100999messageJson=" + mj + "pushIds=RFAKEpushIdA,RFAKEpushIdBfakeSecret"))
	want := hex.EncodeToString(sum[:])
	if got := sign(f, "fakeSecret"); got != want {
		t.Fatalf("sign = %s, want %s", got, want)
	}
	if got := sim.MzSign(f, "fakeSecret"); got != want {
		t.Fatalf("simulator sign = %s, want %s", got, want)
	}
}

// TestMzClientOutcomes: every class of Meizu answer, top-level and per pushId, over TLS
// against the simulator, and the request as received.
func TestMzClientOutcomes(t *testing.T) {
	s := newSim(t, sim.MzConfig{Record: 10})
	appID, secret := s.NewApp()
	cl := newClient(t, s, appID, secret, Config{})
	s.SetPushIDCode(pushID(2), sim.MzUnsubscribed)
	s.SetPushIDCode(pushID(3), sim.MzTooFast)
	s.SetPushIDCode(pushID(4), sim.MzFolded)
	s.SetPushIDCode(pushID(5), sim.MzOverload)
	s.SetPushIDCode(pushID(6), sim.MzPublicCap)
	s.SetPushIDCode(pushID(7), sim.MzNoPermission)
	cases := []struct {
		name   string
		target string
		msg    *push.Message
		inject *sim.Fault
		want   gateway.Kind
		reason string
	}{
		{"sent", pushID(0), notif, nil, gateway.KindSent, ""},
		{"unsubscribed", pushID(2), notif, nil, gateway.KindInvalidToken, "110002"},
		{"illegal", "bad pushId", notif, nil, gateway.KindInvalidToken, "110003"},
		{"comma", "a,b", notif, nil, gateway.KindFailed, "comma"},
		{"switched off", pushID(3), notif, nil, gateway.KindFailed, "110010"},
		{"folded", pushID(4), notif, nil, gateway.KindFailed, "520"},
		{"overload", pushID(5), notif, nil, gateway.KindRetry, "519"},
		{"public cap", pushID(6), notif, nil, gateway.KindFailed, "110011"},
		{"no permission", pushID(7), notif, nil, gateway.KindFailed, "201"},
		{"busy", pushID(0), notif, &sim.Fault{Reason: sim.MzBusy}, gateway.KindRetry, "1003"},
		{"system error", pushID(0), notif, &sim.Fault{Reason: sim.MzSystemError}, gateway.KindRetry, "1001"},
		{"other", pushID(0), notif, &sim.Fault{Reason: sim.MzOther}, gateway.KindRetry, "mz 500"},
		{"app too fast", pushID(0), notif, &sim.Fault{Reason: sim.MzTooFast}, gateway.KindRetry, "110010"},
		{"param error", pushID(0), notif, &sim.Fault{Reason: sim.MzParamError}, gateway.KindFailed, "1005"},
		{"empty param", pushID(0), notif, &sim.Fault{Reason: sim.MzEmptyParam}, gateway.KindFailed, "110004"},
		{"bad package", pushID(0), notif, &sim.Fault{Reason: sim.MzBadPackage}, gateway.KindFailed, "110031"},
		{"day limit", pushID(0), notif, &sim.Fault{Reason: sim.MzDayLimit}, gateway.KindQuota, "110019"},
		{"app count", pushID(0), notif, &sim.Fault{Reason: sim.MzAppCountLimit}, gateway.KindQuota, "110051"},
		{"pass-through limit", pushID(0), notif, &sim.Fault{Reason: sim.MzPassThrough}, gateway.KindQuota, "110053"},
		{"blacklisted", pushID(0), notif, &sim.Fault{Reason: sim.MzBlacklisted}, gateway.KindCredentials, "110009"},
		{"bad app key", pushID(0), notif, &sim.Fault{Reason: sim.MzBadAppKey}, gateway.KindCredentials, "110001"},
		{"bad app secret", pushID(0), notif, &sim.Fault{Reason: sim.MzBadAppSecret}, gateway.KindCredentials, "110033"},
		{"unknown code", pushID(0), notif, &sim.Fault{Reason: "123456"}, gateway.KindFailed, "mz 123456"},
		{"http 503", pushID(0), notif, &sim.Fault{Status: 503, RetryAfter: 2 * time.Second}, gateway.KindRetry, "status 503"},
		{"http 500", pushID(0), notif, &sim.Fault{Status: 500}, gateway.KindRetry, "status 500"},
		{"silent", pushID(0), &push.Message{Channel: push.ChannelMz, Body: []byte(`{"alert":"x","silent":true}`)}, nil, gateway.KindFailed, "silent"},
		{"not a vendor body", pushID(0), &push.Message{Channel: push.ChannelMz, Body: []byte(`[]`)}, nil, gateway.KindFailed, "not a vendor body"},
		{"bad data.mz", pushID(0), &push.Message{Channel: push.ChannelMz, Body: []byte(`{"alert":"x","params":{"clickType":3}}`)}, nil, gateway.KindFailed, "clickType"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.inject != nil {
				s.Inject(1, *c.inject)
			}
			r := cl.Send(context.Background(), delivery(c.msg, c.target))
			if r.Kind != c.want || !strings.Contains(r.Reason, c.reason) {
				t.Fatalf("got %v %q, want %v containing %q", r.Kind, r.Reason, c.want, c.reason)
			}
			if c.name == "http 503" && r.RetryAfter != 2*time.Second {
				t.Fatalf("RetryAfter = %v, want 2s", r.RetryAfter)
			}
		})
	}
	sent := s.Sent()
	if len(sent) == 0 || sent[0].Target != pushID(0) || sent[0].Project != appID {
		t.Fatalf("recorded %+v", sent)
	}
	var m struct {
		NoticeBarInfo struct {
			Title, Content string
			NoticeMsgType  *int
		}
		ClickTypeInfo struct {
			ClickType  int
			Parameters map[string]string
		}
		PushTimeInfo struct{ OffLine, ValidTime int }
		AdvanceInfo  struct{ NotifyKey string }
	}
	if err := json.Unmarshal(sent[0].Body, &m); err != nil {
		t.Fatal(err)
	}
	if m.NoticeBarInfo.Title != "Ana" || m.NoticeBarInfo.Content != "See you at 8?" || m.NoticeBarInfo.NoticeMsgType == nil ||
		m.ClickTypeInfo.ClickType != 0 || m.ClickTypeInfo.Parameters["conv"] != "42" || m.PushTimeInfo.OffLine != 1 ||
		m.PushTimeInfo.ValidTime != 0 || m.AdvanceInfo.NotifyKey == "" || len(m.AdvanceInfo.NotifyKey) > 8 {
		t.Fatalf("messageJson as received: %s", sent[0].Body)
	}
	st := s.Stats()
	if st.ByReason[sim.MzUnsubscribed] != 1 || st.ByReason[sim.MzIllegalPushID] != 1 || st.PerToken["bad pushId"] != 0 {
		t.Fatalf("simulator ledger: %+v", st.ByReason)
	}
}

// TestMzClientCredentials: a wrong secret fails the signature (1006) and an unknown appId is
// 110000; both stop the pool (FIX credentials).
func TestMzClientCredentials(t *testing.T) {
	s := newSim(t, sim.MzConfig{})
	appID, _ := s.NewApp()
	if r := newClient(t, s, appID, "wrong", Config{}).Send(context.Background(), delivery(notif, pushID(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "1006") {
		t.Fatalf("wrong secret: %+v", r)
	}
	if r := newClient(t, s, "42", "x", Config{}).Send(context.Background(), delivery(notif, pushID(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "110000") {
		t.Fatalf("unknown appId: %+v", r)
	}
	if st := s.Stats(); st.Accepted != 0 || st.ByReason[sim.MzSignError] != 1 {
		t.Fatalf("simulator: %+v", st)
	}
}

// TestMzClientBatches: concurrent deliveries of one message share signed requests of at most
// 100 pushIds (the simulator refuses more with 1005); each pushId is delivered once; the
// pushIds the reply names unsubscribed are dropped, the others sent.
func TestMzClientBatches(t *testing.T) {
	s := newSim(t, sim.MzConfig{})
	appID, secret := s.NewApp()
	cl := newClient(t, s, appID, secret, Config{Concurrency: 1})
	const n = 450
	for i := 0; i < n; i += 9 {
		s.MarkInvalid(pushID(i))
	}
	replies := make([]gateway.Reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); replies[i] = cl.Send(context.Background(), delivery(notif, pushID(i))) }()
	}
	wg.Wait()
	dropped := 0
	for i, r := range replies {
		want := gateway.KindSent
		if i%9 == 0 {
			want, dropped = gateway.KindInvalidToken, dropped+1
		}
		if r.Kind != want {
			t.Fatalf("pushId %d: %v %q, want %v", i, r.Kind, r.Reason, want)
		}
	}
	st := s.Stats()
	if st.Accepted != int64(n-dropped) || cl.Targets() != n || st.Requests != cl.Requests() || st.ByReason[sim.MzParamError] != 0 {
		t.Fatalf("simulator accepted %d in %d requests; client %d requests, %d targets", st.Accepted, st.Requests, cl.Requests(), cl.Targets())
	}
	if cl.Requests() > n/2 || cl.Requests() < n/MaxBatch {
		t.Fatalf("%d requests for %d deliveries: not batched (or over 100 per request)", cl.Requests(), n)
	}
	for i := range n {
		if c := st.PerToken[pushID(i)]; (i%9 == 0 && c != 0) || (i%9 != 0 && c != 1) {
			t.Fatalf("pushId %d delivered %d times", i, c)
		}
	}
}

// TestMzClientRateAndQuota: the app's rate limit (top-level 110010) is RETRY, and passes once
// the bucket refills on the simulator's clock; the daily limit (110019) is QUOTA.
func TestMzClientRateAndQuota(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newSim(t, sim.MzConfig{TargetsPerSecond: 2, DayQuota: 4, Now: clock})
	appID, secret := s.NewApp()
	cl := newClient(t, s, appID, secret, Config{})
	for i := range 2 {
		if r := cl.Send(context.Background(), delivery(notif, pushID(i))); r.Kind != gateway.KindSent {
			t.Fatalf("send %d: %+v", i, r)
		}
	}
	if r := cl.Send(context.Background(), delivery(notif, pushID(2))); r.Kind != gateway.KindRetry || !strings.Contains(r.Reason, "110010") {
		t.Fatalf("over the rate: %+v, want retry 110010", r)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	for i := 2; i < 4; i++ {
		if r := cl.Send(context.Background(), delivery(notif, pushID(i))); r.Kind != gateway.KindSent {
			t.Fatalf("send %d after refill: %+v", i, r)
		}
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if r := cl.Send(context.Background(), delivery(notif, pushID(4))); r.Kind != gateway.KindQuota || !strings.Contains(r.Reason, "110019") {
		t.Fatalf("over the day quota: %+v, want quota 110019", r)
	}
	mu.Lock()
	now = now.Add(24 * time.Hour)
	mu.Unlock()
	if r := cl.Send(context.Background(), delivery(notif, pushID(4))); r.Kind != gateway.KindSent {
		t.Fatalf("next day: %+v", r)
	}
}

// TestMzClientOutage: the simulator's scripted outage in each mode is RETRY for the client.
func TestMzClientOutage(t *testing.T) {
	s := newSim(t, sim.MzConfig{})
	appID, secret := s.NewApp()
	cl := newClient(t, s, appID, secret, Config{})
	for _, o := range []sim.Outage{
		{Mode: sim.OutageStatus, Status: 503, RetryAfter: 3 * time.Second, For: time.Hour},
		{Mode: sim.OutageStatus, Reason: sim.MzBusy, For: time.Hour},
		{Mode: sim.OutageDrop, For: time.Hour},
		{Mode: sim.OutageGoAway, For: time.Hour},
	} {
		if err := s.StartOutage(o); err != nil {
			t.Fatal(err)
		}
		r := cl.Send(context.Background(), delivery(notif, pushID(0)))
		if r.Kind != gateway.KindRetry {
			t.Fatalf("outage %+v: %+v, want retry", o, r)
		}
		if o.RetryAfter > 0 && r.RetryAfter != o.RetryAfter {
			t.Fatalf("RetryAfter = %v, want %v", r.RetryAfter, o.RetryAfter)
		}
	}
	s.EndOutage()
	if r := cl.Send(context.Background(), delivery(notif, pushID(0))); r.Kind != gateway.KindSent {
		t.Fatalf("after the outage: %+v", r)
	}
	if st := s.Stats(); st.Outage != 4 || st.Accepted != 1 {
		t.Fatalf("simulator: outage %d accepted %d", st.Outage, st.Accepted)
	}
}

// TestMzClientPayload: data.mz's click action and notifyKey, the remaining lifetime as
// validTime, and title/content cut to Meizu's lengths reach the request; the simulator
// accepts it.
func TestMzClientPayload(t *testing.T) {
	s := newSim(t, sim.MzConfig{Record: 1})
	appID, secret := s.NewApp()
	cl := newClient(t, s, appID, secret, Config{})
	long := strings.Repeat("语", 150)
	m := &push.Message{Channel: push.ChannelMz, Expiration: time.Now().Add(90 * time.Minute),
		Body: []byte(`{"alert":"` + long + `","params":{"clickType":2,"url":"https://example.com/c/42","notifyKey":"chat_42"}}`)}
	if r := cl.Send(context.Background(), delivery(m, pushID(0))); r.Kind != gateway.KindSent {
		t.Fatalf("%+v", r)
	}
	var got struct {
		NoticeBarInfo struct{ Title, Content string }
		ClickTypeInfo struct {
			ClickType int
			URL       string
		}
		PushTimeInfo struct{ ValidTime int }
		AdvanceInfo  struct{ NotifyKey string }
	}
	body := s.Sent()[0].Body
	_ = json.Unmarshal(body, &got)
	if got.NoticeBarInfo.Title != strings.Repeat("语", 32) || got.NoticeBarInfo.Content != strings.Repeat("语", 100) ||
		got.ClickTypeInfo.ClickType != 2 || got.ClickTypeInfo.URL != "https://example.com/c/42" ||
		got.PushTimeInfo.ValidTime != 2 || got.AdvanceInfo.NotifyKey != "chat_42" {
		t.Fatalf("messageJson: %s", body)
	}
}
