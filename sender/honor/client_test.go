package honor

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

func newSim(t testing.TB, cfg sim.HonorConfig) *sim.Honor {
	t.Helper()
	s, err := sim.NewHonor(cfg)
	if err != nil {
		t.Fatalf("cannot start honor simulator: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func tok(i int) string { return fmt.Sprintf("AQAAAACy0honor%06d", i) }

var notif = &push.Message{Channel: push.ChannelHonor, Body: []byte(`{"title":"Ana","alert":"See you at 8?","custom":{"conv":"42"}}`)}

func delivery(m *push.Message, token string) *push.Delivery {
	return &push.Delivery{AppID: "app1", Message: m, Target: push.Target{ObjectID: "o", Channel: push.ChannelHonor, DeviceID: token}}
}

func credsJSON(profiles map[string]ProfileJSON) []byte {
	b, _ := json.Marshal(profiles)
	return b
}

// newClient returns the _default client of an Honor app trusted by s.
func newClient(t testing.TB, s *sim.Honor, appID string, cfg Config) *Client {
	t.Helper()
	id, secret := s.NewApp(appID)
	c, err := Load(credsJSON(map[string]ProfileJSON{"_default": {AppID: appID, ClientID: id, ClientSecret: secret}}))
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

// TestHonorClientOutcomes: every class of Honor answer, over HTTP/2+TLS against the simulator.
func TestHonorClientOutcomes(t *testing.T) {
	s := newSim(t, sim.HonorConfig{Record: 10})
	cl := newClient(t, s, "104455667", Config{QuotaCodes: []string{strconv.Itoa(sim.HonorDefaultQuotaCode)}})
	s.MarkInvalid(tok(1))
	s.MarkFailing(tok(2), true)
	cases := []struct {
		name   string
		msg    *push.Message
		target string
		inject *sim.Fault
		want   gateway.Kind
		reason string
	}{
		{"sent", notif, tok(0), nil, gateway.KindSent, ""},
		{"all invalid", notif, tok(1), nil, gateway.KindInvalidToken, "80300007"},
		{"fail token", notif, tok(2), nil, gateway.KindRetry, "failTokens"},
		{"internal error", notif, tok(0), &sim.Fault{Reason: "81000001"}, gateway.KindRetry, "81000001"},
		{"bad gateway", notif, tok(0), &sim.Fault{Status: 502}, gateway.KindRetry, "status 502"},
		{"traffic control", notif, tok(0), &sim.Fault{Status: 503, RetryAfter: 2 * time.Second}, gateway.KindRetry, "status 503"},
		{"too large", &push.Message{Channel: push.ChannelHonor, Body: []byte(`{"alert":"` + strings.Repeat("x", 5000) + `"}`)}, tok(0), nil, gateway.KindFailed, "80300008"},
		{"no permission", notif, tok(0), &sim.Fault{Reason: "80300002"}, gateway.KindCredentials, "80300002"},
		{"param error", notif, tok(0), &sim.Fault{Reason: "80100001"}, gateway.KindFailed, "80100001"},
		{"auth", notif, tok(0), &sim.Fault{Reason: "80200001"}, gateway.KindAuth, "80200001"},
		{"quota", notif, tok(0), &sim.Fault{Reason: strconv.Itoa(sim.HonorDefaultQuotaCode)}, gateway.KindQuota, "daily quota"},
		{"unknown 4xx", notif, tok(0), &sim.Fault{Status: 400, Reason: "80199999"}, gateway.KindFailed, "80199999"},
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
		Token   []string `json:"token"`
		Data    string   `json:"data"`
		Android struct {
			Notification struct {
				Title, Body string
				ClickAction struct{ Type int } `json:"clickAction"`
			} `json:"notification"`
		} `json:"android"`
	}
	if err := json.Unmarshal(sent[0].Body, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Token) != 1 || req.Token[0] != tok(0) || req.Data != `{"conv":"42"}` ||
		req.Android.Notification.Title != "Ana" || req.Android.Notification.Body != "See you at 8?" || req.Android.Notification.ClickAction.Type != 3 {
		t.Fatalf("request as received: %s", sent[0].Body)
	}
}

// TestHonorClientBatchesPartialSuccess: concurrent deliveries of one message share requests
// of at most BatchSize tokens; a success listing expireTokens drops exactly those and one
// listing failTokens retries exactly those.
func TestHonorClientBatchesPartialSuccess(t *testing.T) {
	s := newSim(t, sim.HonorConfig{})
	cl := newClient(t, s, "104455667", Config{BatchSize: 50, Concurrency: 1})
	const n = 200
	for i := 0; i < n; i += 10 {
		s.MarkInvalid(tok(i))
		s.MarkFailing(tok(i+5), true)
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
		switch i % 10 {
		case 0:
			want = gateway.KindInvalidToken
		case 5:
			want = gateway.KindRetry
		}
		if r.Kind != want {
			t.Fatalf("token %d: %v %q, want %v", i, r.Kind, r.Reason, want)
		}
	}
	st := s.Stats()
	if st.Accepted != n-2*n/10 || st.Requests != cl.Requests() || cl.Targets() != n {
		t.Fatalf("sim accepted %d in %d requests; client %d requests, %d targets", st.Accepted, st.Requests, cl.Requests(), cl.Targets())
	}
	if cl.Requests() > n/2 || cl.Requests() < n/50 {
		t.Fatalf("%d requests for %d deliveries: not batched (or over the 50 limit)", cl.Requests(), n)
	}
	for i := range n {
		if c := st.PerToken[tok(i)]; (i%5 == 0 && c != 0) || (i%5 != 0 && c != 1) {
			t.Fatalf("token %d delivered %d times", i, c)
		}
	}
}

// TestHonorClientAuth: the access token is obtained once and shared; a token the gateway
// calls expired (80200003) is dropped, and the retry obtains a new one; the token is renewed
// before it expires; refused client credentials stop.
func TestHonorClientAuth(t *testing.T) {
	s := newSim(t, sim.HonorConfig{})
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
	now := time.Now()
	cl.TS.SetClock(func() time.Time { return now.Add(56 * time.Minute) })
	if r := cl.Send(context.Background(), delivery(notif, tok(0))); r.Kind != gateway.KindSent {
		t.Fatalf("send near expiry: %+v", r)
	}
	if cl.TokensMinted() != 3 {
		t.Fatalf("minted %d, want 3 (renewed before expiry)", cl.TokensMinted())
	}

	// A token of another app's client is refused for this app id.
	otherID, otherSecret := s.NewApp("200")
	c, _ := Load(credsJSON(map[string]ProfileJSON{"_default": {AppID: "104455667", ClientID: otherID, ClientSecret: otherSecret}}))
	other, err := c.NewClient("profile/_default", Config{Endpoint: s.URL(), TokenURL: s.TokenURL(), TLS: s.ClientTLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if r := other.Send(context.Background(), delivery(notif, tok(0))); r.Kind != gateway.KindAuth || !strings.Contains(r.Reason, "80200001") {
		t.Fatalf("token of another app: %+v, want auth 80200001", r)
	}

	c, _ = Load(credsJSON(map[string]ProfileJSON{"_default": {AppID: "999", ClientID: "nobody", ClientSecret: "wrong"}}))
	bad, err := c.NewClient("profile/_default", Config{Endpoint: s.URL(), TokenURL: s.TokenURL(), TLS: s.ClientTLS()})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if r := bad.Send(context.Background(), delivery(notif, tok(0))); r.Kind != gateway.KindCredentials || !strings.Contains(r.Reason, "invalid_client") {
		t.Fatalf("wrong secret: %+v, want credentials", r)
	}
}

// TestHonorClientSilentParamsAndTTL: a silent push is a data message carrying alert, title
// and the custom keys; data.honor target_user_type and importance and the remaining lifetime
// reach the request in Honor's camelCase keys.
func TestHonorClientSilentParamsAndTTL(t *testing.T) {
	s := newSim(t, sim.HonorConfig{Record: 2})
	cl := newClient(t, s, "104455667", Config{})
	silent := &push.Message{Channel: push.ChannelHonor, Expiration: time.Now().Add(time.Hour),
		Body: []byte(`{"title":"T","alert":"A","silent":true,"custom":{"k":1},"params":{"target_user_type":1}}`)}
	if r := cl.Send(context.Background(), delivery(silent, tok(0))); r.Kind != gateway.KindSent {
		t.Fatalf("%+v", r)
	}
	marketing := &push.Message{Channel: push.ChannelHonor, Body: []byte(`{"alert":"Sale","params":{"importance":"LOW"}}`)}
	if r := cl.Send(context.Background(), delivery(marketing, tok(1))); r.Kind != gateway.KindSent {
		t.Fatalf("%+v", r)
	}
	waitfor.True(t, time.Second, "recorded", func() bool { return len(s.Sent()) == 2 })
	type request struct {
		Data    string `json:"data"`
		Android struct {
			TTL          string `json:"ttl"`
			TargetUser   int    `json:"targetUserType"`
			Notification *struct {
				Title, Body, Importance string
			} `json:"notification"`
		} `json:"android"`
	}
	var req request
	_ = json.Unmarshal(s.Sent()[0].Body, &req)
	a := req.Android
	if req.Data != `{"alert":"A","k":1,"title":"T"}` || a.Notification != nil || a.TargetUser != 1 ||
		(a.TTL != "3600s" && a.TTL != "3599s") {
		t.Fatalf("silent request: %s", s.Sent()[0].Body)
	}
	req = request{}
	_ = json.Unmarshal(s.Sent()[1].Body, &req)
	if n := req.Android.Notification; n == nil || n.Title != "Sale" || n.Body != "Sale" || n.Importance != "LOW" || req.Android.TTL != "" {
		t.Fatalf("marketing request: %s", s.Sent()[1].Body)
	}
	bad := &push.Message{Channel: push.ChannelHonor, Body: []byte(`{"alert":"x","params":{"importance":"HIGH"}}`)}
	if r := cl.Send(context.Background(), delivery(bad, tok(2))); r.Kind != gateway.KindFailed || !strings.Contains(r.Reason, "importance") {
		t.Fatalf("importance HIGH: %+v, want failed", r)
	}
}

func TestHonorCredentials(t *testing.T) {
	for _, bad := range []string{`[]`, `{}`, `{"_default":{}}`, `{"_default":{"appId":"12","clientId":"c"}}`,
		`{"_default":{"appId":"x1","clientId":"c","clientSecret":"s"}}`, `{"9bad":{"appId":"1","clientId":"c","clientSecret":"s"}}`,
		`{"_default":{"appId":"1","clientId":"c","clientSecret":"s","tokenUrl":"ftp://x"}}`} {
		if err := ParseCredentials([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		} else if strings.Contains(err.Error(), `"s"`) {
			t.Errorf("error shows the secret: %v", err)
		}
	}
	if err := ParseCredentials([]byte(`{"_default":{"appId":"104455667","clientId":"c","clientSecret":"s"},"beta":{"appId":"2","clientId":"d","clientSecret":"t"}}`)); err != nil {
		t.Fatal(err)
	}
}

func TestHonorConfigValidate(t *testing.T) {
	for _, bad := range []Config{{BatchSize: 1001}, {Concurrency: -1}, {QuotaCodes: []string{"200"}}, {QuotaCodes: []string{"80300007"}}, {QuotaCodes: []string{""}}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := (Config{QuotaCodes: []string{"80300099"}}).WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}
