package hms

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

func newSim(t testing.TB, cfg sim.HMSConfig) *sim.HMS {
	t.Helper()
	s, err := sim.NewHMS(cfg)
	if err != nil {
		t.Fatalf("cannot start hms simulator: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func tok(i int) string { return fmt.Sprintf("IQAAAACy0fake%06d", i) }

var notif = &push.Message{Channel: push.ChannelHMS, Body: []byte(`{"title":"Ana","alert":"See you at 8?","custom":{"conv":"42"}}`)}

func delivery(m *push.Message, token string) *push.Delivery {
	return &push.Delivery{AppID: "app1", Message: m, Target: push.Target{ObjectID: "o", Channel: push.ChannelHMS, DeviceID: token}}
}

func credsJSON(profiles map[string]ProfileJSON) []byte {
	b, _ := json.Marshal(profiles)
	return b
}

// newClient returns the _default client of an app trusted by s.
func newClient(t testing.TB, s *sim.HMS, appID string, cfg Config) *Client {
	t.Helper()
	secret := s.NewApp(appID)
	c, err := Load(credsJSON(map[string]ProfileJSON{"_default": {AppID: appID, AppSecret: secret}}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	route, err := c.Route(delivery(notif, "x"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Endpoint, cfg.TokenURL, cfg.TLS = s.URL(), s.TokenURL(), s.ClientTLS()
	cl, err := c.NewClient(route, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestHMSClientOutcomes: every class of HMS answer, over HTTP/2+TLS against the simulator.
func TestHMSClientOutcomes(t *testing.T) {
	s := newSim(t, sim.HMSConfig{Record: 10})
	cl := newClient(t, s, "104455667", Config{})
	s.MarkInvalid(tok(1))
	cases := []struct {
		name   string
		msg    *push.Message
		inject *sim.Fault
		want   gateway.Kind
		reason string
	}{
		{"sent", notif, nil, gateway.KindSent, ""},
		{"all invalid", notif, nil, gateway.KindInvalidToken, "80300007"},
		{"internal error", notif, &sim.Fault{Reason: "81000001"}, gateway.KindRetry, "81000001"},
		{"bad gateway", notif, &sim.Fault{Status: 502}, gateway.KindRetry, "status 502"},
		{"traffic control", notif, &sim.Fault{Status: 503, RetryAfter: 2 * time.Second}, gateway.KindRetry, "status 503"},
		{"too large", &push.Message{Channel: push.ChannelHMS, Body: []byte(`{"alert":"` + strings.Repeat("x", 5000) + `"}`)}, nil, gateway.KindFailed, "80300008"},
		{"no permission", notif, &sim.Fault{Reason: "80300002"}, gateway.KindCredentials, "80300002"},
		{"sensitive", notif, &sim.Fault{Reason: "80100016"}, gateway.KindFailed, "80100016"},
		{"unknown 4xx", notif, &sim.Fault{Status: 400, Reason: "80199999"}, gateway.KindFailed, "80199999"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.inject != nil {
				s.Inject(1, *c.inject)
			}
			target := tok(0)
			if c.name == "all invalid" {
				target = tok(1)
			}
			r := cl.Send(context.Background(), delivery(c.msg, target))
			if r.Kind != c.want || !strings.Contains(r.Reason, c.reason) {
				t.Fatalf("got %v %q, want %v containing %q", r.Kind, r.Reason, c.want, c.reason)
			}
			if c.name == "traffic control" && r.RetryAfter != 2*time.Second {
				t.Fatalf("RetryAfter = %v, want 2s", r.RetryAfter)
			}
		})
	}
	sent := s.Sent()
	if len(sent) == 0 {
		t.Fatal("nothing recorded")
	}
	var req struct {
		Message struct {
			Token   []string `json:"token"`
			Data    string   `json:"data"`
			Android struct {
				Urgency      string `json:"urgency"`
				Notification struct {
					Title, Body string
					ClickAction struct{ Type int } `json:"click_action"`
				} `json:"notification"`
			} `json:"android"`
		} `json:"message"`
	}
	if err := json.Unmarshal(sent[0].Body, &req); err != nil {
		t.Fatal(err)
	}
	m := req.Message
	if len(m.Token) != 1 || m.Token[0] != tok(0) || m.Data != `{"conv":"42"}` || m.Android.Urgency != "NORMAL" ||
		m.Android.Notification.Title != "Ana" || m.Android.Notification.Body != "See you at 8?" || m.Android.Notification.ClickAction.Type != 3 {
		t.Fatalf("request as received: %s", sent[0].Body)
	}
}

// TestHMSClientBatchesPartialSuccess: concurrent deliveries of one message share requests of
// at most BatchSize tokens; a partial success (80100000) drops exactly the listed tokens.
func TestHMSClientBatchesPartialSuccess(t *testing.T) {
	s := newSim(t, sim.HMSConfig{})
	cl := newClient(t, s, "104455667", Config{BatchSize: 50, Concurrency: 1})
	const n = 200
	for i := 0; i < n; i += 10 {
		s.MarkInvalid(tok(i))
	}
	replies := make([]gateway.Reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = cl.Send(context.Background(), delivery(notif, tok(i)))
		}()
	}
	wg.Wait()
	for i, r := range replies {
		want := gateway.KindSent
		if i%10 == 0 {
			want = gateway.KindInvalidToken
		}
		if r.Kind != want {
			t.Fatalf("token %d: %v %q, want %v", i, r.Kind, r.Reason, want)
		}
	}
	st := s.Stats()
	if st.Accepted != n-n/10 || st.Requests != cl.Requests() || cl.Targets() != n {
		t.Fatalf("sim accepted %d in %d requests; client %d requests, %d targets", st.Accepted, st.Requests, cl.Requests(), cl.Targets())
	}
	if cl.Requests() > n/2 || cl.Requests() < n/50 {
		t.Fatalf("%d requests for %d deliveries: not batched (or over the 50 limit)", cl.Requests(), n)
	}
	for i := range n {
		if c := st.PerToken[tok(i)]; (i%10 == 0 && c != 0) || (i%10 != 0 && c != 1) {
			t.Fatalf("token %d delivered %d times", i, c)
		}
	}
}

// TestHMSClientAuth: the access token is obtained once and shared; a token the gateway calls
// expired (80200003) is dropped, and the retry obtains a new one; refused credentials stop.
func TestHMSClientAuth(t *testing.T) {
	s := newSim(t, sim.HMSConfig{})
	cl := newClient(t, s, "104455667", Config{})
	for i := range 3 {
		if r := cl.Send(context.Background(), delivery(notif, tok(i))); r.Kind != gateway.KindSent {
			t.Fatalf("send %d: %+v", i, r)
		}
	}
	if cl.TokensMinted() != 1 {
		t.Fatalf("minted %d tokens for 3 sends, want 1", cl.TokensMinted())
	}
	s.ExpireAccessTokens()
	r := cl.Send(context.Background(), delivery(notif, tok(0)))
	if r.Kind != gateway.KindAuth || !strings.Contains(r.Reason, "80200003") {
		t.Fatalf("after expiry: %+v, want auth 80200003", r)
	}
	if r := cl.Send(context.Background(), delivery(notif, tok(0))); r.Kind != gateway.KindSent {
		t.Fatalf("retry after auth: %+v", r)
	}
	if cl.TokensMinted() != 2 {
		t.Fatalf("minted %d, want 2", cl.TokensMinted())
	}

	// Renewed before expiry: with the clock past expiry minus the margin, a new token is minted
	// without any refusal.
	now := time.Now()
	cl.TS.SetClock(func() time.Time { return now.Add(56 * time.Minute) })
	if r := cl.Send(context.Background(), delivery(notif, tok(0))); r.Kind != gateway.KindSent {
		t.Fatalf("send near expiry: %+v", r)
	}
	if cl.TokensMinted() != 3 {
		t.Fatalf("minted %d, want 3 (renewed before expiry)", cl.TokensMinted())
	}

	c, _ := Load(credsJSON(map[string]ProfileJSON{"_default": {AppID: "999", AppSecret: "wrong"}}))
	bad, err := c.NewClient("profile/_default", Config{Endpoint: s.URL(), TokenURL: s.TokenURL(), TLS: s.ClientTLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if r := bad.Send(context.Background(), delivery(notif, tok(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "1101") {
		t.Fatalf("wrong secret: %+v, want credentials", r)
	}
}

// TestHMSClientSilentAndTTL: a silent push is a data message carrying alert, title and the
// custom keys; data.hms target_user_type and the remaining lifetime reach the request.
func TestHMSClientSilentAndTTL(t *testing.T) {
	s := newSim(t, sim.HMSConfig{Record: 1})
	cl := newClient(t, s, "104455667", Config{})
	m := &push.Message{Channel: push.ChannelHMS, Expiration: time.Now().Add(time.Hour),
		Body: []byte(`{"title":"T","alert":"A","silent":true,"custom":{"k":1},"params":{"target_user_type":1}}`)}
	if r := cl.Send(context.Background(), delivery(m, tok(0))); r.Kind != gateway.KindSent {
		t.Fatalf("%+v", r)
	}
	waitfor.True(t, time.Second, "recorded", func() bool { return len(s.Sent()) == 1 })
	var req struct {
		Message struct {
			Data    string `json:"data"`
			Android struct {
				TTL          string          `json:"ttl"`
				TargetUser   int             `json:"target_user_type"`
				Notification json.RawMessage `json:"notification"`
			} `json:"android"`
		} `json:"message"`
	}
	_ = json.Unmarshal(s.Sent()[0].Body, &req)
	a := req.Message.Android
	if req.Message.Data != `{"alert":"A","k":1,"title":"T"}` || a.Notification != nil || a.TargetUser != 1 ||
		(a.TTL != "3600s" && a.TTL != "3599s") {
		t.Fatalf("request: %s", s.Sent()[0].Body)
	}
}
