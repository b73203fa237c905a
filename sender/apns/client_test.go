package apns

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

const (
	testTeam  = "TEAM123456"
	testKey   = "KEY1234567"
	testTopic = "com.example.chat"
)

func devToken(i int) string { return fmt.Sprintf("%064x", i+1) }

func newSim(t testing.TB, cfg sim.APNsConfig) *sim.APNs {
	t.Helper()
	s, err := sim.NewAPNs(cfg)
	if err != nil {
		t.Fatalf("cannot start apns simulator: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func simConfig(s *sim.APNs) Config {
	return Config{ProdEndpoint: s.URL(), DevEndpoint: s.URL(), TLS: s.ClientTLS()}
}

func tokenCreds(t testing.TB, s *sim.APNs, teams ...string) []byte {
	t.Helper()
	j := CredentialsJSON{DefaultTopic: testTopic}
	for i, team := range teams {
		kid := fmt.Sprintf("KEY%07d", i)
		p8, err := s.NewKey(kid, team)
		if err != nil {
			t.Fatal(err)
		}
		j.Teams = append(j.Teams, TeamKey{TeamID: team, KeyID: kid, P8: string(p8)})
	}
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func delivery(tok string) *push.Delivery {
	return &push.Delivery{
		AppID: "app1", Prod: true,
		Message: &push.Message{Channel: push.ChannelAPNs, Body: []byte(`{"aps":{"alert":"hi"}}`), PushType: "alert", Priority: 10},
		Target:  push.Target{ObjectID: "obj", Channel: push.ChannelAPNs, DeviceID: tok},
	}
}

func mustClient(t testing.TB, raw []byte, d *push.Delivery, cfg Config) *Client {
	t.Helper()
	c, err := Load(raw)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	route, err := c.Route(d)
	if err != nil {
		t.Fatalf("Route: %v", err)
	}
	cl, err := c.NewClient(route, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestAPNsClientOutcomes(t *testing.T) {
	s := newSim(t, sim.APNsConfig{Record: 10})
	raw := tokenCreds(t, s, testTeam)
	cl := mustClient(t, raw, delivery(devToken(0)), simConfig(s))
	s.MarkUnregistered(devToken(1))
	s.MarkBadToken(devToken(2))
	s.MarkExpiredToken(devToken(3))
	s.SetTokenTopic(devToken(4), "com.other.app")
	cases := []struct {
		name   string
		tok    string
		inject *sim.Fault
		want   gateway.Kind
		reason string
	}{
		{"sent", devToken(0), nil, gateway.KindSent, ""},
		{"unregistered", devToken(1), nil, gateway.KindInvalidToken, "Unregistered"},
		{"bad token", devToken(2), nil, gateway.KindInvalidToken, "BadDeviceToken"},
		{"expired token", devToken(3), nil, gateway.KindInvalidToken, "ExpiredToken"},
		{"not for topic", devToken(4), nil, gateway.KindFailed, "DeviceTokenNotForTopic"},
		{"503", devToken(0), &sim.Fault{Status: 503}, gateway.KindRetry, "ServiceUnavailable"},
		{"500", devToken(0), &sim.Fault{Status: 500}, gateway.KindRetry, "InternalServerError"},
		{"429 per token", devToken(0), &sim.Fault{Status: 429, Reason: "TooManyRequests"}, gateway.KindRetry, "TooManyRequests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.inject != nil {
				s.Inject(1, *c.inject)
			}
			got := cl.Send(context.Background(), delivery(c.tok))
			if got.Kind != c.want || got.Reason != c.reason {
				t.Fatalf("got %v %q, want %v %q", got.Kind, got.Reason, c.want, c.reason)
			}
		})
	}
}

func TestAPNsClientRetryAfter(t *testing.T) {
	s := newSim(t, sim.APNsConfig{})
	cl := mustClient(t, tokenCreds(t, s, testTeam), delivery(devToken(0)), simConfig(s))
	s.Inject(1, sim.Fault{Status: 503, RetryAfter: 7 * time.Second})
	got := cl.Send(context.Background(), delivery(devToken(0)))
	if got.Kind != gateway.KindRetry || got.RetryAfter != 7*time.Second {
		t.Fatalf("got %+v, want retry after 7s", got)
	}
}

func TestAPNsClientHeadersAndTopic(t *testing.T) {
	s := newSim(t, sim.APNsConfig{Record: 10})
	cl := mustClient(t, tokenCreds(t, s, testTeam), delivery(devToken(0)), simConfig(s))
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	d := delivery(devToken(0))
	d.Message.Expiration = exp
	d.Message.CollapseID = "conv-42"
	d.Message.Priority = 5
	d.Message.PushType = "background"
	d.Message.Body = []byte(`{"aps":{"content-available":1}}`)
	d.Target.Topic = "com.example.installation" // installation topic beats the app default
	if got := cl.Send(context.Background(), d); got.Kind != gateway.KindSent {
		t.Fatalf("send: %+v", got)
	}
	d2 := delivery(devToken(1))
	d2.Target.Topic = "com.example.installation"
	d2.Message.Topic = "com.example.request" // the request's topic beats both
	if got := cl.Send(context.Background(), d2); got.Kind != gateway.KindSent {
		t.Fatalf("send: %+v", got)
	}
	if got := cl.Send(context.Background(), delivery(devToken(2))); got.Kind != gateway.KindSent {
		t.Fatalf("send: %+v", got)
	}
	sent := s.Sent()
	if len(sent) != 3 {
		t.Fatalf("simulator recorded %d, want 3", len(sent))
	}
	h := sent[0].Headers
	want := map[string]string{
		"apns-topic": "com.example.installation", "apns-expiration": fmt.Sprint(exp.Unix()),
		"apns-collapse-id": "conv-42", "apns-priority": "5", "apns-push-type": "background",
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("header %s = %q, want %q", k, h[k], v)
		}
	}
	if got := sent[1].Headers["apns-topic"]; got != "com.example.request" {
		t.Errorf("request topic: got %q", got)
	}
	if got := sent[2].Headers["apns-topic"]; got != testTopic {
		t.Errorf("default topic: got %q", got)
	}
}

func TestAPNsClientCredentialErrors(t *testing.T) {
	s := newSim(t, sim.APNsConfig{})
	// A key the simulator does not trust: InvalidProviderToken.
	p8, err := sim.NewAPNsKey(testKey, testTeam)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(CredentialsJSON{DefaultTopic: testTopic, Teams: []TeamKey{{TeamID: testTeam, KeyID: testKey, P8: string(p8)}}})
	cl := mustClient(t, raw, delivery(devToken(0)), simConfig(s))
	got := cl.Send(context.Background(), delivery(devToken(0)))
	if got.Kind != gateway.KindCredentials || got.Reason != "InvalidProviderToken" {
		t.Fatalf("got %+v, want credentials InvalidProviderToken", got)
	}
	// A certificate the simulator does not trust: BadCertificate.
	cert, err := sim.NewClientCert(testTopic)
	if err != nil {
		t.Fatal(err)
	}
	pemb, _ := sim.ClientCertPEM(cert)
	raw, _ = json.Marshal(CredentialsJSON{Production: &CertJSON{PEM: string(pemb)}})
	cl = mustClient(t, raw, delivery(devToken(0)), simConfig(s))
	got = cl.Send(context.Background(), delivery(devToken(0)))
	if got.Kind != gateway.KindCredentials || got.Reason != "BadCertificate" {
		t.Fatalf("got %+v, want credentials BadCertificate", got)
	}
}

func TestAPNsClientCertAuthProfilePrecedence(t *testing.T) {
	s := newSim(t, sim.APNsConfig{Record: 10})
	prodCert, _ := sim.NewClientCert("com.example.app")
	profCert, _ := sim.NewClientCert("com.example.enterprise")
	s.AddClientCert(profCert.Leaf, "com.example.enterprise") // only the profile's is trusted
	prodPEM, _ := sim.ClientCertPEM(prodCert)
	profPEM, _ := sim.ClientCertPEM(profCert)
	raw, _ := json.Marshal(CredentialsJSON{
		Production:  &CertJSON{PEM: string(prodPEM)},
		Development: &CertJSON{PEM: string(prodPEM)},
		Profiles:    map[string]CertJSON{"enterprise": {PEM: string(profPEM), Env: "prod"}},
	})
	c, err := Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	d := delivery(devToken(0))
	d.Prod = false // the profile's env wins over prod
	d.Target.Profile = "enterprise"
	route, err := c.Route(d)
	if err != nil || route != "profile/enterprise/prod" {
		t.Fatalf("route = %q, %v", route, err)
	}
	cl, err := c.NewClient(route, simConfig(s))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := cl.Send(context.Background(), d); got.Kind != gateway.KindSent {
		t.Fatalf("profile certificate: %+v", got)
	}
	if got := s.Sent()[0].Headers["apns-topic"]; got != "" {
		t.Errorf("cert auth without any topic sends no apns-topic, got %q", got)
	}
	d.Target.Profile = ""
	route, _ = c.Route(d)
	if route != "cert/dev" {
		t.Fatalf("route = %q, want cert/dev", route)
	}
	cl2, _ := c.NewClient(route, simConfig(s))
	defer cl2.Close()
	if got := cl2.Send(context.Background(), d); got.Kind != gateway.KindCredentials {
		t.Fatalf("untrusted development certificate: %+v", got)
	}
	d.Target.Profile = "missing"
	if _, err := c.Route(d); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("unknown profile: %v", err)
	}
}

func TestAPNsRouteTeamRule(t *testing.T) {
	s := newSim(t, sim.APNsConfig{})
	one, _ := Load(tokenCreds(t, s, "TEAMAAAAAA"))
	two, _ := Load(tokenCreds(t, s, "TEAMAAAAAA", "TEAMBBBBBB"))
	cases := []struct {
		name           string
		c              *Credentials
		reqTeam, inst  string
		prod           bool
		want, errMatch string
	}{
		{"only team", one, "", "", true, "team/TEAMAAAAAA/prod", ""},
		{"dev env", one, "", "", false, "team/TEAMAAAAAA/dev", ""},
		{"request team", two, "TEAMBBBBBB", "TEAMAAAAAA", true, "team/TEAMBBBBBB/prod", ""},
		{"installation team", two, "", "TEAMBBBBBB", true, "team/TEAMBBBBBB/prod", ""},
		{"ambiguous", two, "", "", true, "", "apns_team_id required"},
		{"unknown team", one, "TEAMZZZZZZ", "", true, "", "TEAMZZZZZZ is not configured"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := delivery(devToken(0))
			d.Prod = c.prod
			d.Message.TeamID = c.reqTeam
			d.Target.TeamID = c.inst
			got, err := c.c.Route(d)
			if c.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), c.errMatch) {
					t.Fatalf("got %q, %v; want error %q", got, err, c.errMatch)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestAPNsRouteTwoTeamsSend(t *testing.T) {
	s := newSim(t, sim.APNsConfig{})
	raw := tokenCreds(t, s, "TEAMAAAAAA", "TEAMBBBBBB")
	for _, team := range []string{"TEAMAAAAAA", "TEAMBBBBBB"} {
		d := delivery(devToken(0))
		d.Message.TeamID = team
		cl := mustClient(t, raw, d, simConfig(s))
		if got := cl.Send(context.Background(), d); got.Kind != gateway.KindSent {
			t.Fatalf("team %s: %+v", team, got)
		}
	}
	if got := s.Stats().AuthTokens; got != 2 {
		t.Fatalf("simulator saw %d provider tokens, want one per team", got)
	}
}

func TestAPNsClientNoTopic(t *testing.T) {
	s := newSim(t, sim.APNsConfig{})
	p8, _ := s.NewKey(testKey, testTeam)
	raw, _ := json.Marshal(CredentialsJSON{Teams: []TeamKey{{TeamID: testTeam, KeyID: testKey, P8: string(p8)}}})
	cl := mustClient(t, raw, delivery(devToken(0)), simConfig(s))
	got := cl.Send(context.Background(), delivery(devToken(0)))
	if got.Kind != gateway.KindFailed || !strings.Contains(got.Reason, "no apns topic") {
		t.Fatalf("got %+v", got)
	}
	if n := s.Stats().Requests; n != 0 {
		t.Fatalf("simulator got %d requests, want none", n)
	}
}

func TestAPNsClientConnectionsGrowOnlyWhenSaturated(t *testing.T) {
	s := newSim(t, sim.APNsConfig{Knobs: sim.Knobs{Latency: 20 * time.Millisecond}})
	cfg := simConfig(s)
	cfg.StreamsPerConn, cfg.MaxConns = 2, 4 // 16 in flight would need 8: held to 4
	cl := mustClient(t, tokenCreds(t, s, testTeam), delivery(devToken(0)), cfg)
	if got := cl.Send(context.Background(), delivery(devToken(0))); got.Kind != gateway.KindSent {
		t.Fatal(got)
	}
	if cl.Conns() != 1 {
		t.Fatalf("one sequential request opened %d connections", cl.Conns())
	}
	done := make(chan gateway.Reply)
	for i := 0; i < 16; i++ {
		go func() { done <- cl.Send(context.Background(), delivery(devToken(i))) }()
	}
	for i := 0; i < 16; i++ {
		if r := <-done; r.Kind != gateway.KindSent {
			t.Fatal(r)
		}
	}
	if n := cl.Conns(); n < 2 || n > 4 {
		t.Fatalf("16 concurrent requests at 2 streams per connection opened %d connections, want 2..4", n)
	}
}

// TestAPNsClientConcurrentSendsBeyondStreamLimit: more callers than the server's
// SETTINGS_MAX_CONCURRENT_STREAMS (APNs allows 1 on a fresh token-auth connection and lowers
// it at will). With StrictMaxConcurrentStreams and a sharing Conns the connection stalls until
// the request timeout (golang/go#70809, as TestFCMClientConcurrentSendsBeyondStreamLimit).
func TestAPNsClientConcurrentSendsBeyondStreamLimit(t *testing.T) {
	for _, c := range []struct {
		name                                    string
		serverStreams, maxConns, streamsPerConn int
	}{
		{"limit as advertised", 8, 2, 8},
		// A server advertising fewer streams than StreamsPerConn: the transport replays the
		// streams refused before SETTINGS arrived and opens more connections rather than stall.
		// (A limit of 1, as on a fresh token-auth connection, still costs refused streams and
		// their retries here: see docs/decisions.md, "Senders", connections.)
		{"server limit below StreamsPerConn", 4, 2, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t, sim.APNsConfig{MaxConcurrentStreams: c.serverStreams})
			cfg := simConfig(s)
			cfg.MaxConns, cfg.StreamsPerConn, cfg.RequestTimeout = c.maxConns, c.streamsPerConn, 10*time.Minute
			cl := mustClient(t, tokenCreds(t, s, testTeam), delivery(devToken(0)), cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const senders, per = 64, 24
			var (
				mu     sync.Mutex
				failed = map[string]int{}
				wg     sync.WaitGroup
			)
			for g := range senders {
				wg.Go(func() {
					for i := range per {
						if r := cl.Send(ctx, delivery(devToken(g*per+i))); r.Kind != gateway.KindSent {
							mu.Lock()
							failed[r.Kind.String()+" "+r.Reason]++
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			if st := s.Stats(); len(failed) > 0 || st.Accepted != senders*per {
				t.Fatalf("accepted %d of %d; failed sends by reply: %v", st.Accepted, senders*per, failed)
			}
		})
	}
}
