package fcm

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

func newSim(t testing.TB, cfg sim.FCMConfig) *sim.FCM {
	t.Helper()
	s, err := sim.NewFCM(cfg)
	if err != nil {
		t.Fatalf("cannot start fcm simulator: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func regToken(i int) string { return fmt.Sprintf("reg:APA91b%08d", i) }

func delivery(tok string) *push.Delivery {
	return &push.Delivery{
		AppID: "app1",
		Message: &push.Message{Channel: push.ChannelFCM,
			Body: []byte(`{"notification":{"title":"Ana","body":"hi"},"android":{"priority":"HIGH","ttl":"3600s"}}`)},
		Target: push.Target{ObjectID: "obj", Channel: push.ChannelFCM, DeviceID: tok},
	}
}

func newClient(t testing.TB, s *sim.FCM, project string) *Client {
	t.Helper()
	sa, err := s.NewServiceAccount(project)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(sa)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	route, _ := c.Route(nil)
	cl, err := c.NewClient(route, Config{Endpoint: s.URL(), TLS: s.ClientTLS()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestFCMClientOutcomes(t *testing.T) {
	s := newSim(t, sim.FCMConfig{Record: 10})
	cl := newClient(t, s, "demo-chat")
	s.MarkUnregistered(regToken(1))
	s.MarkBadToken(regToken(2))
	s.MarkSenderMismatch(regToken(3))
	cases := []struct {
		name   string
		tok    string
		body   string
		inject *sim.Fault
		want   gateway.Kind
		reason string
	}{
		{"sent", regToken(0), "", nil, gateway.KindSent, ""},
		{"unregistered", regToken(1), "", nil, gateway.KindInvalidToken, "UNREGISTERED"},
		{"bad token", regToken(2), "", nil, gateway.KindInvalidToken, "INVALID_ARGUMENT"},
		{"malformed token", "not a token!", "", nil, gateway.KindInvalidToken, "INVALID_ARGUMENT"},
		{"sender mismatch", regToken(3), "", nil, gateway.KindCredentials, "SENDER_ID_MISMATCH"},
		{"bad message", regToken(0), `{"android":{"ttl":"forever"}}`, nil, gateway.KindFailed, "INVALID_ARGUMENT: message.android.ttl"},
		{"503", regToken(0), "", &sim.Fault{Status: 503}, gateway.KindRetry, "UNAVAILABLE"},
		{"500", regToken(0), "", &sim.Fault{Status: 500}, gateway.KindRetry, "INTERNAL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.inject != nil {
				s.Inject(1, *c.inject)
			}
			d := delivery(c.tok)
			if c.body != "" {
				d.Message.Body = []byte(c.body)
			}
			got := cl.Send(context.Background(), d)
			if got.Kind != c.want || !strings.HasPrefix(got.Reason, c.reason) {
				t.Fatalf("got %v %q, want %v %q", got.Kind, got.Reason, c.want, c.reason)
			}
			if c.want == gateway.KindCredentials && !got.TokenScoped {
				t.Fatal("SENDER_ID_MISMATCH must be token-scoped")
			}
		})
	}
	sent := s.Sent()
	if len(sent) != 1 || sent[0].Target != regToken(0) || sent[0].Project != "demo-chat" {
		t.Fatalf("recorded %+v", sent)
	}
	var m struct {
		Message struct {
			Token        string          `json:"token"`
			Notification json.RawMessage `json:"notification"`
		} `json:"message"`
	}
	if err := json.Unmarshal(sent[0].Body, &m); err != nil || m.Message.Token != regToken(0) || len(m.Message.Notification) == 0 {
		t.Fatalf("body %s: %v", sent[0].Body, err)
	}
}

func TestFCMClientRetryAfter(t *testing.T) {
	s := newSim(t, sim.FCMConfig{})
	cl := newClient(t, s, "demo-chat")
	s.Inject(1, sim.Fault{Status: 429, Reason: "QUOTA_EXCEEDED", RetryAfter: 42 * time.Second})
	got := cl.Send(context.Background(), delivery(regToken(0)))
	if got.Kind != gateway.KindRetry || got.RetryAfter != 42*time.Second || got.Reason != "QUOTA_EXCEEDED" {
		t.Fatalf("got %+v", got)
	}
}

func TestFCMClientTokenMintedOnceAndShared(t *testing.T) {
	s := newSim(t, sim.FCMConfig{})
	cl := newClient(t, s, "demo-chat")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := cl.Send(context.Background(), delivery(regToken(i))); r.Kind != gateway.KindSent {
				t.Errorf("send %d: %+v", i, r)
			}
		}()
	}
	wg.Wait()
	if n := cl.TokensMinted(); n != 1 {
		t.Fatalf("50 concurrent sends minted %d access tokens, want 1", n)
	}
	if n := s.Stats().AuthTokens; n != 1 {
		t.Fatalf("simulator issued %d access tokens, want 1", n)
	}
}

func TestFCMClientRefreshOn401(t *testing.T) {
	s := newSim(t, sim.FCMConfig{})
	cl := newClient(t, s, "demo-chat")
	if r := cl.Send(context.Background(), delivery(regToken(0))); r.Kind != gateway.KindSent {
		t.Fatal(r)
	}
	s.ExpireAccessTokens()
	r := cl.Send(context.Background(), delivery(regToken(0)))
	if r.Kind != gateway.KindAuth {
		t.Fatalf("after the gateway forgot the token: %+v, want auth", r)
	}
	if r := cl.Send(context.Background(), delivery(regToken(0))); r.Kind != gateway.KindSent {
		t.Fatalf("retry with a fresh token: %+v", r)
	}
	if n := cl.TokensMinted(); n != 2 {
		t.Fatalf("minted %d tokens, want 2", n)
	}
}

func TestFCMClientRefreshBeforeExpiry(t *testing.T) {
	s := newSim(t, sim.FCMConfig{AccessTokenTTL: time.Hour})
	cl := newClient(t, s, "demo-chat")
	now := time.Now()
	var mu sync.Mutex
	cl.ts.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	if r := cl.Send(context.Background(), delivery(regToken(0))); r.Kind != gateway.KindSent {
		t.Fatal(r)
	}
	mu.Lock()
	now = now.Add(54 * time.Minute) // within 5 minutes of expiry
	mu.Unlock()
	if r := cl.Send(context.Background(), delivery(regToken(0))); r.Kind != gateway.KindSent {
		t.Fatal(r)
	}
	if n := cl.TokensMinted(); n != 1 {
		t.Fatalf("54 min: minted %d, want 1", n)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if r := cl.Send(context.Background(), delivery(regToken(0))); r.Kind != gateway.KindSent {
		t.Fatal(r)
	}
	if n := cl.TokensMinted(); n != 2 {
		t.Fatalf("56 min: minted %d, want 2", n)
	}
}

func TestFCMClientUntrustedServiceAccount(t *testing.T) {
	s := newSim(t, sim.FCMConfig{})
	sa, err := sim.NewServiceAccount("demo-chat", s.TokenURL()) // not registered with the simulator
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(sa)
	if err != nil {
		t.Fatal(err)
	}
	route, _ := c.Route(nil)
	cl, _ := c.NewClient(route, Config{Endpoint: s.URL(), TLS: s.ClientTLS()})
	defer cl.Close()
	r := cl.Send(context.Background(), delivery(regToken(0)))
	if r.Kind != gateway.KindCredentials || !strings.HasPrefix(r.Reason, "oauth2 token refused") {
		t.Fatalf("got %+v", r)
	}
}

func TestFCMParseCredentials(t *testing.T) {
	sa, err := sim.NewServiceAccount("demo-chat", "https://127.0.0.1:1/token")
	if err != nil {
		t.Fatal(err)
	}
	if err := ParseCredentials(sa); err != nil {
		t.Fatalf("valid service account: %v", err)
	}
	var m map[string]any
	_ = json.Unmarshal(sa, &m)
	mod := func(k string, v any) []byte {
		c := map[string]any{}
		for kk, vv := range m {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		return b
	}
	cases := []struct {
		name string
		raw  []byte
		want string
	}{
		{"not json", []byte("{"), "cannot decode"},
		{"no project", mod("project_id", nil), "required"},
		{"bad key", mod("private_key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "not a PEM RSA private key"},
		{"bad type", mod("type", "authorized_user"), "not service_account"},
		{"bad endpoint", mod("endpoint", "ftp://x"), "not an http(s) URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ParseCredentials(c.raw)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "AAAA") {
				t.Fatal("error quotes key material")
			}
		})
	}
}

func TestFCMClassify(t *testing.T) {
	f := func(status int, body string, want gateway.Kind, reason string) {
		t.Helper()
		got := classify(status, []byte(body))
		if got.Kind != want || got.Reason != reason {
			t.Errorf("classify(%d, %s) = %v %q, want %v %q", status, body, got.Kind, got.Reason, want, reason)
		}
	}
	fcmErr := func(code int, status, errorCode string) string {
		return fmt.Sprintf(`{"error":{"code":%d,"status":%q,"details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":%q}]}}`, code, status, errorCode)
	}
	f(404, fcmErr(404, "NOT_FOUND", "UNREGISTERED"), gateway.KindInvalidToken, "UNREGISTERED")
	f(401, fcmErr(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR"), gateway.KindCredentials, "THIRD_PARTY_AUTH_ERROR")
	f(401, `{"error":{"code":401,"status":"UNAUTHENTICATED"}}`, gateway.KindAuth, "UNAUTHENTICATED")
	f(403, `{"error":{"code":403,"status":"PERMISSION_DENIED"}}`, gateway.KindCredentials, "PERMISSION_DENIED")
	f(429, fcmErr(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"), gateway.KindRetry, "QUOTA_EXCEEDED")
	f(503, ``, gateway.KindRetry, "status 503")
	f(400, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"The registration token is not a valid FCM registration token"}}`, gateway.KindInvalidToken, "INVALID_ARGUMENT")
	f(400, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"Invalid value at 'message.data[0].value'"}}`, gateway.KindFailed, "INVALID_ARGUMENT: Invalid value at 'message.data[0].value'")
	f(418, `teapot`, gateway.KindFailed, "status 418")
}

// TestFCMClientConcurrentSendsBeyondStreamLimit sends from many more goroutines than the
// connections have streams. Before the fix the client put every caller on a connection whose
// x/net/http2 transport ran with StrictMaxConcurrentStreams: each request reserves a stream
// slot before queueing for the connection's header lock, the one holding the lock waits until
// active streams + reservations < MAX_CONCURRENT_STREAMS, and the queued callers' reservations
// alone reach the limit once the active streams finish (golang/go#70809). The connection then
// stalls until the request timeout, with the server idle. Counts, not timing: every send must
// be accepted exactly once before the deadline.
func TestFCMClientConcurrentSendsBeyondStreamLimit(t *testing.T) {
	cases := []struct {
		name             string
		serverStreams    int
		maxConns         int
		streamsPerConn   int
		senders, perSend int
	}{
		// The production shape scaled down: the pool's StreamsPerConn equals what the server
		// advertises, far more workers than MaxConns*StreamsPerConn.
		{"limit as advertised", 8, 2, 8, 64, 24},
		// A server advertising fewer streams than StreamsPerConn (a front end lowering its
		// limit): the transport replays the streams refused before SETTINGS arrived and opens
		// more connections rather than stalling.
		{"server limit below StreamsPerConn", 4, 2, 16, 64, 24},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t, sim.FCMConfig{MaxConcurrentStreams: c.serverStreams})
			sa, err := s.NewServiceAccount("demo-chat")
			if err != nil {
				t.Fatal(err)
			}
			creds, err := Load(sa)
			if err != nil {
				t.Fatal(err)
			}
			route, _ := creds.Route(nil)
			// The request timeout is far beyond the test's deadline: a stalled connection shows
			// up as sends cut off by ctx, never as a retryable timeout that hides it.
			cl, err := creds.NewClient(route, Config{
				Endpoint: s.URL(), TLS: s.ClientTLS(),
				ConnConfig: gateway.ConnConfig{MaxConns: c.maxConns, StreamsPerConn: c.streamsPerConn, RequestTimeout: 10 * time.Minute},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var (
				mu     sync.Mutex
				failed = map[string]int{}
				wg     sync.WaitGroup
			)
			for g := range c.senders {
				wg.Go(func() {
					for i := range c.perSend {
						r := cl.Send(ctx, delivery(regToken(g*c.perSend+i)))
						if r.Kind != gateway.KindSent {
							mu.Lock()
							failed[r.Kind.String()+" "+r.Reason]++
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			want := int64(c.senders * c.perSend)
			st := s.Stats()
			if len(failed) > 0 || st.Accepted != want || st.Requests != want {
				t.Fatalf("%d sends: simulator answered %d, accepted %d; failed sends by reply: %v (ctx: %v)",
					want, st.Requests, st.Accepted, failed, ctx.Err())
			}
			for tok, n := range st.PerToken {
				if n != 1 {
					t.Fatalf("token %s accepted %d times", tok, n)
				}
			}
			if n := cl.Conns(); n > c.maxConns {
				t.Fatalf("%d connection sets open, max %d", n, c.maxConns)
			}
		})
	}
}
