package sim

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

const (
	testKeyID  = "KEY1234567"
	testTeamID = "TEAM123456"
	testTopic  = "com.example.chat"
	testToken  = "5f1c0e9a7b2d4c6e8f0a1b3c5d7e9f11223344556677889900aabbccddeeff00"
)

// apnsFixture is a simulator with one trusted key and a client speaking HTTP/2 to it.
type apnsFixture struct {
	s   *APNs
	key *ecdsa.PrivateKey
	jwt string
	c   *http.Client
}

func newAPNsFixture(t *testing.T, cfg APNsConfig) *apnsFixture {
	t.Helper()
	s, err := NewAPNs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	p8, err := s.NewKey(testKeyID, testTeamID)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ParseAPNsKey(p8)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	jwt, err := NewAPNsToken(key, testKeyID, testTeamID, now())
	if err != nil {
		t.Fatal(err)
	}
	return &apnsFixture{s: s, key: key, jwt: jwt, c: h2Client(t, s.ClientTLS())}
}

func h2Client(t *testing.T, tc *tls.Config) *http.Client {
	t.Helper()
	tr := &http2.Transport{TLSClientConfig: tc}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

type apnsReq struct {
	method  string
	path    string // default /3/device/<testToken>
	token   string
	headers map[string]string // "" value deletes a default header
	dup     string            // header to send twice
	body    string
	noAuth  bool
}

type apnsResp struct {
	status     int
	reason     string
	timestamp  int64
	id         string
	retryAfter string
	proto      int
}

func (f *apnsFixture) send(t *testing.T, q apnsReq) apnsResp {
	t.Helper()
	return sendAPNs(t, f.c, f.s.URL(), f.jwt, q)
}

func sendAPNs(t *testing.T, c *http.Client, base, jwt string, q apnsReq) apnsResp {
	t.Helper()
	if q.method == "" {
		q.method = http.MethodPost
	}
	if q.path == "" {
		tok := testToken
		if q.token != "" {
			tok = q.token
		}
		q.path = "/3/device/" + tok
	}
	if q.body == "" {
		q.body = `{"aps":{"alert":"hi"}}`
	}
	req, err := http.NewRequest(q.method, base+q.path, strings.NewReader(q.body))
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"apns-topic": testTopic, "apns-push-type": "alert"}
	if !q.noAuth && jwt != "" {
		h["authorization"] = "bearer " + jwt
	}
	for k, v := range q.headers {
		h[k] = v
	}
	for k, v := range h {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	if q.dup != "" {
		req.Header.Add(q.dup, req.Header.Get(q.dup))
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := apnsResp{status: resp.StatusCode, id: resp.Header.Get("apns-id"),
		retryAfter: resp.Header.Get("Retry-After"), proto: resp.ProtoMajor}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Reason    string `json:"reason"`
			Timestamp int64  `json:"timestamp"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("error body %q is not JSON: %v", b, err)
		}
		out.reason, out.timestamp = e.Reason, e.Timestamp
	} else if len(b) != 0 {
		t.Fatalf("200 with body %q, want empty", b)
	}
	return out
}

func TestAPNsSimAccepts(t *testing.T) {
	f := newAPNsFixture(t, APNsConfig{Record: 10})
	id := "2b7c1d1e-5a10-4f0a-9d3e-2f6a8c1b7e42"
	r := f.send(t, apnsReq{headers: map[string]string{"apns-id": id, "apns-priority": "10",
		"apns-expiration": "1735776000", "apns-collapse-id": "conv-42"}})
	if r.status != 200 || r.id != id || r.proto != 2 {
		t.Fatalf("got %+v, want 200 over h2 echoing apns-id", r)
	}
	r = f.send(t, apnsReq{})
	if r.status != 200 || !validUUID(r.id) {
		t.Fatalf("got %+v, want 200 with a generated apns-id", r)
	}
	st := f.s.Stats()
	if st.Accepted != 2 || st.PerToken[testToken] != 2 || st.ByStatus[200] != 2 || st.AuthTokens != 1 {
		t.Fatalf("stats %+v", st)
	}
	sent := f.s.Sent()
	if len(sent) != 2 || sent[0].Headers["apns-collapse-id"] != "conv-42" || string(sent[0].Body) != `{"aps":{"alert":"hi"}}` {
		t.Fatalf("sent %+v", sent)
	}
}

func TestAPNsSimRejects(t *testing.T) {
	f := newAPNsFixture(t, APNsConfig{Topics: map[string][]string{testTeamID: {testTopic}}})
	big := `{"aps":{"alert":"` + strings.Repeat("x", 4100) + `"}}`
	voipOK := `{"aps":{},"x":"` + strings.Repeat("x", 4500) + `"}`
	cases := []struct {
		name   string
		q      apnsReq
		status int
		reason string
	}{
		{"get", apnsReq{method: http.MethodGet}, 405, "MethodNotAllowed"},
		{"bad path", apnsReq{path: "/3/devices/x"}, 404, "BadPath"},
		{"missing token", apnsReq{path: "/3/device/"}, 400, "MissingDeviceToken"},
		{"non-hex token", apnsReq{token: strings.Repeat("z", 64)}, 400, "BadDeviceToken"},
		{"short token", apnsReq{token: "abcd"}, 400, "BadDeviceToken"},
		{"duplicate topic", apnsReq{dup: "apns-topic"}, 400, "DuplicateHeaders"},
		{"missing topic", apnsReq{headers: map[string]string{"apns-topic": ""}}, 400, "MissingTopic"},
		{"other team topic", apnsReq{headers: map[string]string{"apns-topic": "com.other"}}, 400, "TopicDisallowed"},
		{"voip without suffix", apnsReq{headers: map[string]string{"apns-push-type": "voip"}}, 400, "BadTopic"},
		{"unknown push type", apnsReq{headers: map[string]string{"apns-push-type": "banner"}}, 400, "InvalidPushType"},
		{"bad apns-id", apnsReq{headers: map[string]string{"apns-id": "not-a-uuid"}}, 400, "BadMessageId"},
		{"priority 7", apnsReq{headers: map[string]string{"apns-priority": "7"}}, 400, "BadPriority"},
		{"background priority 10", apnsReq{headers: map[string]string{"apns-push-type": "background", "apns-priority": "10"}}, 400, "BadPriority"},
		{"expiration text", apnsReq{headers: map[string]string{"apns-expiration": "tomorrow"}}, 400, "BadExpirationDate"},
		{"collapse id 65", apnsReq{headers: map[string]string{"apns-collapse-id": strings.Repeat("c", 65)}}, 400, "BadCollapseId"},
		{"empty body", apnsReq{body: " "}, 400, "PayloadEmpty"},
		{"not json", apnsReq{body: `{"aps":`}, 400, "PayloadEmpty"},
		{"no aps", apnsReq{body: `{"alert":"x"}`}, 400, "PayloadEmpty"},
		{"too large", apnsReq{body: big}, 413, "PayloadTooLarge"},
		{"voip too large", apnsReq{body: `{"aps":{},"x":"` + strings.Repeat("x", 5200) + `"}`,
			headers: map[string]string{"apns-push-type": "voip", "apns-topic": testTopic + ".voip"}}, 413, "PayloadTooLarge"},
		{"voip 4.5k ok", apnsReq{body: voipOK,
			headers: map[string]string{"apns-push-type": "voip", "apns-topic": testTopic + ".voip"}}, 200, ""},
		{"background 5 ok", apnsReq{body: `{"aps":{"content-available":1}}`,
			headers: map[string]string{"apns-push-type": "background", "apns-priority": "5"}}, 200, ""},
		{"missing auth", apnsReq{noAuth: true}, 403, "MissingProviderToken"},
		{"garbage auth", apnsReq{headers: map[string]string{"authorization": "bearer a.b.c"}}, 403, "InvalidProviderToken"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.send(t, c.q)
			if r.status != c.status || r.reason != c.reason {
				t.Fatalf("got %d %q, want %d %q", r.status, r.reason, c.status, c.reason)
			}
			if !validUUID(r.id) {
				t.Fatalf("answer without apns-id: %+v", r)
			}
		})
	}
	st := f.s.Stats()
	if st.ByReason["PayloadEmpty"] != 3 || st.ByStatus[413] != 2 || st.Accepted != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAPNsSimWhitespaceBodyIsNotEmpty(t *testing.T) {
	// A body of only whitespace is not empty but not a payload either.
	f := newAPNsFixture(t, APNsConfig{BadPayloadReason: "BadPayload"})
	if r := f.send(t, apnsReq{body: "  "}); r.reason != "BadPayload" {
		t.Fatalf("got %+v", r)
	}
}

// clock is an injectable, settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func TestAPNsSimProviderToken(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	f := newAPNsFixture(t, APNsConfig{Now: clk.now})
	mint := func(key *ecdsa.PrivateKey, kid, team string, iat time.Time) string {
		tok, err := NewAPNsToken(key, kid, team, iat)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if r := f.send(t, apnsReq{}); r.status != 200 {
		t.Fatalf("fresh token: %+v", r)
	}
	// Wrong issuer and a key the simulator does not know are invalid.
	other, err := NewAPNsKey("OTHERKEY00", testTeamID)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := ParseAPNsKey(other)
	for name, jwt := range map[string]string{
		"wrong iss":       mint(f.key, testKeyID, "OTHERTEAM0", clk.now()),
		"wrong signature": mint(otherKey, testKeyID, testTeamID, clk.now()),
		"unknown kid":     mint(otherKey, "OTHERKEY00", testTeamID, clk.now()),
		"future iat":      mint(f.key, testKeyID, testTeamID, clk.now().Add(time.Hour)),
	} {
		r := sendAPNs(t, h2Client(t, f.s.ClientTLS()), f.s.URL(), jwt, apnsReq{})
		if r.status != 403 || r.reason != "InvalidProviderToken" {
			t.Fatalf("%s: got %+v", name, r)
		}
	}
	// A new token on the same connection within 20 minutes is a too-frequent refresh.
	clk.add(10 * time.Minute)
	f.jwt = mint(f.key, testKeyID, testTeamID, clk.now())
	if r := f.send(t, apnsReq{}); r.status != 429 || r.reason != "TooManyProviderTokenUpdates" {
		t.Fatalf("early refresh: %+v", r)
	}
	// ...but is fine on a new connection, and the old one keeps working.
	if r := sendAPNs(t, h2Client(t, f.s.ClientTLS()), f.s.URL(), f.jwt, apnsReq{}); r.status != 200 {
		t.Fatalf("new connection: %+v", r)
	}
	// After an hour the first token has expired; a token minted 50 minutes after the
	// first (more than 20 minutes later) replaces it on the same connection.
	clk.add(55 * time.Minute)
	f.jwt = mint(f.key, testKeyID, testTeamID, time.Unix(1_800_000_000, 0))
	if r := f.send(t, apnsReq{}); r.status != 403 || r.reason != "ExpiredProviderToken" {
		t.Fatalf("expired: %+v", r)
	}
	f.jwt = mint(f.key, testKeyID, testTeamID, time.Unix(1_800_000_000, 0).Add(50*time.Minute))
	if r := f.send(t, apnsReq{}); r.status != 200 {
		t.Fatalf("refresh after 50 min: %+v", r)
	}
	// A second key on the same connection is unrelated to it.
	p8, err := f.s.NewKey("SECONDKEY0", testTeamID)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := ParseAPNsKey(p8)
	second := mint(k2, "SECONDKEY0", testTeamID, clk.now())
	if r := sendAPNs(t, f.c, f.s.URL(), second, apnsReq{}); r.status != 403 || r.reason != "UnrelatedKeyIdInToken" {
		t.Fatalf("second key: %+v", r)
	}
	if r := sendAPNs(t, h2Client(t, f.s.ClientTLS()), f.s.URL(), second, apnsReq{}); r.status != 200 {
		t.Fatalf("second key on its own connection: %+v", r)
	}
}

func TestAPNsSimKeyEnvironment(t *testing.T) {
	s, err := NewAPNs(APNsConfig{Sandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p8, _ := NewAPNsKey(testKeyID, testTeamID)
	key, _ := ParseAPNsKey(p8)
	s.auth.addKey(testKeyID, APNsKey{TeamID: testTeamID, Public: &key.PublicKey, Env: "production"})
	jwt, _ := NewAPNsToken(key, testKeyID, testTeamID, time.Now())
	r := sendAPNs(t, h2Client(t, s.ClientTLS()), s.URL(), jwt, apnsReq{})
	if r.status != 403 || r.reason != "BadEnvironmentKeyInToken" {
		t.Fatalf("got %+v", r)
	}
}

func TestAPNsSimCertAuth(t *testing.T) {
	good, err := NewClientCert(testTopic)
	if err != nil {
		t.Fatal(err)
	}
	multi, _ := NewClientCert("com.example.a")
	stranger, _ := NewClientCert(testTopic)
	prodOnly, _ := NewClientCert(testTopic)
	s, err := NewAPNs(APNsConfig{Sandbox: true, ClientCerts: []APNsClientCert{
		{Cert: good.Leaf, Topics: []string{testTopic}},
		{Cert: prodOnly.Leaf, Topics: []string{testTopic}, Env: "production"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.AddClientCert(multi.Leaf, "com.example.a", "com.example.b")
	client := func(c tls.Certificate) *http.Client {
		tc := s.ClientTLS()
		tc.Certificates = []tls.Certificate{c}
		return h2Client(t, tc)
	}
	cases := []struct {
		name   string
		cert   tls.Certificate
		topic  string
		status int
		reason string
	}{
		{"default topic", good, "", 200, ""},
		{"own topic", good, testTopic, 200, ""},
		{"voip topic", good, testTopic + ".voip", 200, ""},
		{"other topic", good, "com.other", 400, "TopicDisallowed"},
		{"multi-topic cert needs topic", multi, "", 400, "MissingTopic"},
		{"multi-topic cert second topic", multi, "com.example.b", 200, ""},
		{"unknown cert", stranger, testTopic, 403, "BadCertificate"},
		{"production cert on sandbox", prodOnly, testTopic, 403, "BadCertificateEnvironment"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{"apns-topic": c.topic}
			if c.topic == testTopic+".voip" {
				h["apns-push-type"] = "voip"
			}
			r := sendAPNs(t, client(c.cert), s.URL(), "", apnsReq{headers: h})
			if r.status != c.status || r.reason != c.reason {
				t.Fatalf("got %d %q, want %d %q", r.status, r.reason, c.status, c.reason)
			}
		})
	}
}

func TestAPNsSimTokenRegistry(t *testing.T) {
	clk := &clock{t: time.UnixMilli(1_800_000_000_123)}
	f := newAPNsFixture(t, APNsConfig{Now: clk.now, PerTokenPerSecond: 2})
	tok := func(c byte) string { return strings.Repeat(string(c), 64) }
	f.s.MarkUnregistered(tok('a'))
	f.s.MarkExpiredToken(tok('b'))
	f.s.MarkBadToken(tok('c'))
	f.s.SetTokenTopic(tok('d'), "com.example.other")
	cases := []struct {
		token  string
		status int
		reason string
	}{
		{tok('a'), 410, "Unregistered"},
		{tok('b'), 410, "ExpiredToken"},
		{tok('c'), 400, "BadDeviceToken"},
		{tok('d'), 400, "DeviceTokenNotForTopic"},
		{tok('e'), 200, ""},
		{tok('e'), 200, ""},
		{tok('e'), 429, "TooManyRequests"},
	}
	for _, c := range cases {
		r := f.send(t, apnsReq{token: c.token})
		if r.status != c.status || r.reason != c.reason {
			t.Fatalf("%s: got %+v, want %d %q", c.token[:4], r, c.status, c.reason)
		}
		if c.reason == "Unregistered" && r.timestamp != 1_800_000_000_123 {
			t.Fatalf("timestamp %d", r.timestamp)
		}
	}
	clk.add(time.Second)
	f.s.ClearToken(tok('a'))
	for _, tk := range []string{tok('a'), tok('e')} {
		if r := f.send(t, apnsReq{token: tk}); r.status != 200 {
			t.Fatalf("after clear / next second: %+v", r)
		}
	}
}

func TestAPNsSimFaults(t *testing.T) {
	f := newAPNsFixture(t, APNsConfig{})
	f.s.Inject(2, Fault{Status: 503})
	f.s.Inject(1, Fault{Status: 429, Reason: "TooManyRequests", RetryAfter: 1500 * time.Millisecond})
	f.s.Inject(1, Fault{Status: 500})
	want := []apnsResp{
		{status: 503, reason: "ServiceUnavailable"},
		{status: 503, reason: "ServiceUnavailable"},
		{status: 429, reason: "TooManyRequests", retryAfter: "2"},
		{status: 500, reason: "InternalServerError"},
		{status: 200},
	}
	for i, w := range want {
		r := f.send(t, apnsReq{})
		if r.status != w.status || r.reason != w.reason || r.retryAfter != w.retryAfter {
			t.Fatalf("request %d: got %+v, want %+v", i, r, w)
		}
	}
	if n := f.s.PendingFaults(); n != 0 {
		t.Fatalf("pending %d", n)
	}
}

func TestAPNsSimKnobs(t *testing.T) {
	const n = 200
	cfg := APNsConfig{Knobs: Knobs{ErrorRate: 0.2, InvalidTokenRate: 0.3, Latency: time.Millisecond,
		Jitter: time.Millisecond, RatePerSecond: 20000, Seed: 7}}
	f := newAPNsFixture(t, cfg)
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = fmt.Sprintf("%064x", i)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[int]int{}
	for i := range n {
		wg.Go(func() {
			r := f.send(t, apnsReq{token: tokens[i]})
			mu.Lock()
			got[r.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	st := f.s.Stats()
	if st.Requests != n || int(st.ByStatus[500]+st.ByStatus[503]) != got[500]+got[503] || got[500]+got[503] == 0 {
		t.Fatalf("stats %+v, client saw %v", st, got)
	}
	// Every request that got past the random server errors was answered by token state alone.
	for tok, c := range st.PerToken {
		if IsDeadToken(tok, 0.3, 7) || c != 1 {
			t.Fatalf("token %s accepted %d times (dead=%v)", tok, c, IsDeadToken(tok, 0.3, 7))
		}
	}
	if int(st.ByStatus[410])+int(st.Accepted)+got[500]+got[503] != n || st.ByStatus[410] == 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestAPNsSimControlEndpoints(t *testing.T) {
	f := newAPNsFixture(t, APNsConfig{})
	f.send(t, apnsReq{})
	f.send(t, apnsReq{token: strings.Repeat("Z", 64)})
	get := func(path string) Stats {
		resp, err := f.c.Get(f.s.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st Stats
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := get("/_stats")
	if st.Requests != 2 || st.PerToken[testToken] != 1 || st.ByReason["BadDeviceToken"] != 1 || st.ByStatus[400] != 1 {
		t.Fatalf("stats %+v", st)
	}
	if st := get("/_stats?tokens=0"); st.PerToken != nil || st.Accepted != 1 {
		t.Fatalf("stats without tokens %+v", st)
	}
	resp, err := f.c.Post(f.s.URL()+"/_reset", "", bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := f.s.Stats(); st.Requests != 0 || len(st.PerToken) != 0 {
		t.Fatalf("after reset %+v", st)
	}
}

func TestAPNsSimCloseWithRequestsInFlight(t *testing.T) {
	f := newAPNsFixture(t, APNsConfig{Knobs: Knobs{Latency: time.Hour}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.s.URL()+"/3/device/"+testToken, strings.NewReader("{}"))
		resp, err := f.c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	// Close must not wait for the hour-long answer (whether or not it has arrived yet).
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("request answered after Close")
	}
}

func TestAPNsSimCeiling(t *testing.T) {
	f := newAPNsFixture(t, APNsConfig{Topics: map[string][]string{testTeamID: {CeilingTopic}}})
	perSec, err := Ceiling(context.Background(), f.s.URL(), f.s.ClientTLS(), "bearer "+f.jwt, 300, 32)
	if err != nil {
		t.Fatal(err)
	}
	if st := f.s.Stats(); perSec <= 0 || st.PerToken[CeilingToken] != 300 {
		t.Fatalf("perSec %v, stats %+v", perSec, st)
	}
	if _, err := Ceiling(context.Background(), f.s.URL(), f.s.ClientTLS(), "bearer nope", 10, 2); err == nil {
		t.Fatal("ceiling with a bad token succeeded")
	}
}

func TestAPNsSimPayloadScan(t *testing.T) {
	for body, want := range map[string]bool{
		`{"aps":{}}`: true,
		` { "x" : [1,{"aps":2}], "y":"a\"ps" , "aps" : {"alert":"x"} } `: true,
		`{"x":{"aps":{}},"aps":"no"}`:                                    false,
		`{"x":{"aps":{}}}`:                                               false,
		`{"aps":[]}`:                                                     false,
		`{}`:                                                             false,
		`[{"aps":{}}]`:                                                   false,
		`{"aps":{}`:                                                      false,
		`{"a":1,"b":true,"c":null,"aps":{"b":1}}`: true,
		`{"a":-1.5e3,"aps":{}}`:                   true,
	} {
		if got := validAPSPayload([]byte(body)); got != want {
			t.Errorf("validAPSPayload(%s) = %v, want %v", body, got, want)
		}
	}
}

func FuzzAPNsSimPayloadScan(f *testing.F) {
	for _, s := range []string{`{"aps":{}}`, `{"a":[1,"x"],"aps":{"alert":"\"}"}}`, `{"x":{"aps":{}}}`, `{}`, `{"Aps":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The oracle decodes into a map: exact keys, as APNs reads them (a struct field would
		// match "Aps" too). A map keeps the last duplicate and the scanner the first, and the
		// scanner does not unescape keys: compare only where those cannot differ.
		if bytes.Count(b, []byte("aps")) > 1 || bytes.Contains(b, []byte(`\`)) {
			return
		}
		var m map[string]json.RawMessage
		aps := []byte(nil)
		if json.Unmarshal(b, &m) == nil {
			aps = m["aps"]
		}
		want := len(aps) > 0 && aps[0] == '{'
		if got := validAPSPayload(b); got != want {
			t.Fatalf("validAPSPayload(%q) = %v, want %v", b, got, want)
		}
	})
}
