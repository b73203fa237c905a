package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testProject  = "demo-chat"
	testFCMToken = "fOo1:APA91bFakeRegistrationToken"
)

type fcmFixture struct {
	s      *FCM   // nil when the simulator runs elsewhere
	base   string // send base URL
	tokURL string
	sa     []byte
	c      *http.Client
	access string
}

// newFCMFixture starts a simulator, trusts a fresh service account and fetches an access token.
func newFCMFixture(t *testing.T, cfg FCMConfig) *fcmFixture {
	t.Helper()
	s, err := NewFCM(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	sa, err := s.NewServiceAccount(testProject)
	if err != nil {
		t.Fatal(err)
	}
	f := &fcmFixture{s: s, base: s.URL(), tokURL: s.TokenURL(), sa: sa, c: h2Client(t, s.ClientTLS())}
	now := time.Now()
	if cfg.Now != nil {
		now = cfg.Now()
	}
	f.access = f.fetchToken(t, now)
	return f
}

func (f *fcmFixture) fetchToken(t *testing.T, iat time.Time) string {
	t.Helper()
	a, err := NewFCMAssertion(f.sa, iat)
	if err != nil {
		t.Fatal(err)
	}
	status, body := f.postToken(t, url.Values{"grant_type": {jwtBearerGrant}, "assertion": {a}})
	if status != 200 {
		t.Fatalf("token endpoint: %d %s", status, body)
	}
	var tr struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
		TokenType   string `json:"token_type"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" || tr.TokenType != "Bearer" || tr.ExpiresIn <= 0 {
		t.Fatalf("token reply %s (%v)", body, err)
	}
	return tr.AccessToken
}

func (f *fcmFixture) postToken(t *testing.T, form url.Values) (int, []byte) {
	t.Helper()
	resp, err := f.c.PostForm(f.tokURL, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type fcmResp struct {
	status     int
	name       string
	errStatus  string
	errorCode  string
	field      string
	retryAfter string
	proto      int
}

func (f *fcmFixture) send(t *testing.T, project, body string) fcmResp {
	t.Helper()
	return f.sendAuth(t, project, "Bearer "+f.access, body)
}

func (f *fcmFixture) sendAuth(t *testing.T, project, authz, body string) fcmResp {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.base+"/v1/projects/"+project+"/messages:send", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := f.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := fcmResp{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), proto: resp.ProtoMajor}
	var r struct {
		Name  string `json:"name"`
		Error struct {
			Code    int    `json:"code"`
			Status  string `json:"status"`
			Message string `json:"message"`
			Details []struct {
				Type            string `json:"@type"`
				ErrorCode       string `json:"errorCode"`
				FieldViolations []struct {
					Field string `json:"field"`
				} `json:"fieldViolations"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	out.name, out.errStatus = r.Name, r.Error.Status
	if resp.StatusCode != 200 && (r.Error.Code != resp.StatusCode || r.Error.Message == "") {
		t.Fatalf("error body %s does not match status %d", b, resp.StatusCode)
	}
	for _, d := range r.Error.Details {
		if d.ErrorCode != "" {
			out.errorCode = d.ErrorCode
		}
		if len(d.FieldViolations) > 0 {
			out.field = d.FieldViolations[0].Field
		}
	}
	return out
}

func msg(fields string) string { return `{"message":{` + fields + `}}` }

func TestFCMSimAccepts(t *testing.T) {
	f := newFCMFixture(t, FCMConfig{Record: 5})
	body := `{"message":{"token":"` + testFCMToken + `",
	 "notification":{"title":"Ana","body":"See you at 8?"},
	 "data":{"conv":"42"},
	 "android":{"priority":"HIGH","ttl":"3600s","collapse_key":"conv-42","notification":{"channel_id":"chat"}}}}`
	r := f.send(t, testProject, body)
	if r.status != 200 || !strings.HasPrefix(r.name, "projects/demo-chat/messages/0:") || r.proto != 2 {
		t.Fatalf("got %+v", r)
	}
	for _, b := range []string{
		msg(`"topic":"news","android":{"priority":"normal","ttl":"3.5s","collapseKey":"x","directBootOk":true}`),
		msg(`"condition":"'a' in topics && 'b' in topics"`),
		`{"validateOnly":true,"message":{"token":"` + testFCMToken + `"}}`,
		`{"validate_only":true,"message":{"token":"` + testFCMToken + `"}}`,
	} {
		if r := f.send(t, testProject, b); r.status != 200 {
			t.Fatalf("%s: %+v", b, r)
		}
	}
	st := f.s.Stats()
	if st.Accepted != 3 || st.ValidateOnly != 2 || st.PerToken[testFCMToken] != 1 ||
		st.PerTopic["topic:news"] != 1 || st.AuthTokens != 1 || st.Requests != 5 {
		t.Fatalf("stats %+v", st)
	}
	if sent := f.s.Sent(); len(sent) != 3 || sent[0].Project != testProject || sent[0].Target != testFCMToken {
		t.Fatalf("sent %+v", sent)
	}
}

func TestFCMSimRejects(t *testing.T) {
	f := newFCMFixture(t, FCMConfig{})
	tok := `"token":"` + testFCMToken + `"`
	big := strings.Repeat("x", 4100)
	cases := []struct {
		name, body string
		status     int
		code       string // errorCode
		field      string
	}{
		{"no target", msg(`"data":{"a":"b"}`), 400, "INVALID_ARGUMENT", "message"},
		{"two targets", msg(tok + `,"topic":"news"`), 400, "INVALID_ARGUMENT", "message"},
		{"no message", `{}`, 400, "INVALID_ARGUMENT", "message"},
		{"not json", `{"message":`, 400, "INVALID_ARGUMENT", "message"},
		{"unknown field", msg(tok + `,"priority":"high"`), 400, "INVALID_ARGUMENT", "message"},
		{"data number", msg(tok + `,"data":{"n":1}`), 400, "INVALID_ARGUMENT", "message.data"},
		{"reserved data key", msg(tok + `,"data":{"from":"x"}`), 400, "INVALID_ARGUMENT", "message.data"},
		{"google data key", msg(tok + `,"data":{"google.x":"x"}`), 400, "INVALID_ARGUMENT", "message.data"},
		{"ttl number", msg(tok + `,"android":{"ttl":3600}`), 400, "INVALID_ARGUMENT", "message"},
		{"ttl without s", msg(tok + `,"android":{"ttl":"3600"}`), 400, "INVALID_ARGUMENT", "message.android.ttl"},
		{"ttl five weeks", msg(tok + `,"android":{"ttl":"3024000s"}`), 400, "INVALID_ARGUMENT", "message.android.ttl"},
		{"priority urgent", msg(tok + `,"android":{"priority":"urgent"}`), 400, "INVALID_ARGUMENT", "message.android.priority"},
		{"notification number", msg(tok + `,"notification":{"title":5}`), 400, "INVALID_ARGUMENT", "message"},
		{"notification unknown", msg(tok + `,"notification":{"sound":"x"}`), 400, "INVALID_ARGUMENT", "message"},
		{"bad topic", msg(`"topic":"news flash"`), 400, "INVALID_ARGUMENT", "message.topic"},
		{"too big", msg(tok + `,"data":{"a":"` + big + `"}`), 400, "INVALID_ARGUMENT", "message"},
		{"topic too big", msg(`"topic":"news","data":{"a":"` + strings.Repeat("x", 2100) + `"}`), 400, "INVALID_ARGUMENT", "message"},
		{"token at limit", msg(tok + `,"data":{"a":"` + strings.Repeat("x", 4095) + `"}`), 200, "", ""},
		{"malformed token", msg(`"token":"bad token!"`), 400, "INVALID_ARGUMENT", "message.token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.send(t, testProject, c.body)
			if r.status != c.status || r.errorCode != c.code || r.field != c.field {
				t.Fatalf("got %+v, want %d %s %s", r, c.status, c.code, c.field)
			}
			if c.status == 400 && r.errStatus != "INVALID_ARGUMENT" {
				t.Fatalf("status %q", r.errStatus)
			}
		})
	}
}

func TestFCMSimAuth(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	f := newFCMFixture(t, FCMConfig{Now: clk.now, AccessTokenTTL: 10 * time.Minute})
	body := msg(`"token":"` + testFCMToken + `"`)
	check := func(name string, r fcmResp, status int, st string) {
		t.Helper()
		if r.status != status || r.errStatus != st || (st != "" && r.errorCode != "") {
			t.Fatalf("%s: got %+v, want %d %s without errorCode", name, r, status, st)
		}
	}
	check("no auth", f.sendAuth(t, testProject, "", body), 401, "UNAUTHENTICATED")
	check("unknown token", f.sendAuth(t, testProject, "Bearer ya29.nope", body), 401, "UNAUTHENTICATED")
	check("other project", f.send(t, "other-project", body), 403, "PERMISSION_DENIED")
	check("good", f.send(t, testProject, body), 200, "")
	clk.add(11 * time.Minute)
	check("expired access token", f.send(t, testProject, body), 401, "UNAUTHENTICATED")
	f.access = f.fetchToken(t, clk.now())
	check("refreshed", f.send(t, testProject, body), 200, "")
	f.s.ExpireAccessTokens()
	check("revoked", f.send(t, testProject, body), 401, "UNAUTHENTICATED")

	// Token endpoint checks.
	other, err := NewServiceAccount(testProject, f.s.TokenURL()) // not registered
	if err != nil {
		t.Fatal(err)
	}
	good, _ := NewFCMAssertion(f.sa, clk.now())
	stranger, _ := NewFCMAssertion(other, clk.now())
	old, _ := NewFCMAssertion(f.sa, clk.now().Add(-2*time.Hour))
	future, _ := NewFCMAssertion(f.sa, clk.now().Add(10*time.Minute))
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + parts[1] + "x." + parts[2]
	for name, c := range map[string]struct {
		form  url.Values
		error string
	}{
		"wrong grant":     {url.Values{"grant_type": {"client_credentials"}, "assertion": {good}}, "unsupported_grant_type"},
		"unknown account": {url.Values{"grant_type": {jwtBearerGrant}, "assertion": {stranger}}, "invalid_grant"},
		"expired":         {url.Values{"grant_type": {jwtBearerGrant}, "assertion": {old}}, "invalid_grant"},
		"future":          {url.Values{"grant_type": {jwtBearerGrant}, "assertion": {future}}, "invalid_grant"},
		"tampered":        {url.Values{"grant_type": {jwtBearerGrant}, "assertion": {tampered}}, "invalid_grant"},
		"garbage":         {url.Values{"grant_type": {jwtBearerGrant}, "assertion": {"x.y"}}, "invalid_grant"},
	} {
		status, b := f.postToken(t, c.form)
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		if status != 400 || e.Error != c.error {
			t.Fatalf("%s: %d %s, want 400 %s", name, status, b, c.error)
		}
	}
}

func TestFCMSimTokenRegistry(t *testing.T) {
	f := newFCMFixture(t, FCMConfig{})
	f.s.MarkUnregistered("dead")
	f.s.MarkSenderMismatch("elsewhere")
	f.s.MarkBadToken("bad")
	cases := []struct {
		token      string
		status     int
		code, st   string
		validateOK bool
	}{
		{"dead", 404, "UNREGISTERED", "NOT_FOUND", false},
		{"elsewhere", 403, "SENDER_ID_MISMATCH", "PERMISSION_DENIED", false},
		{"bad", 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", false},
		{"alive", 200, "", "", true},
	}
	for _, c := range cases {
		for _, vo := range []string{"", `"validate_only":true,`} {
			r := f.send(t, testProject, `{`+vo+`"message":{"token":"`+c.token+`"}}`)
			if r.status != c.status || r.errorCode != c.code || r.errStatus != c.st {
				t.Fatalf("%s %s: got %+v", c.token, vo, r)
			}
		}
	}
	st := f.s.Stats()
	if st.PerToken["alive"] != 1 || st.ValidateOnly != 1 || st.ByReason["UNREGISTERED"] != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestFCMSimFaultsAndQuota(t *testing.T) {
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	f := newFCMFixture(t, FCMConfig{Now: clk.now, QuotaPerMinute: 3})
	body := msg(`"token":"` + testFCMToken + `"`)
	f.s.Inject(1, Fault{Status: 503, RetryAfter: 30 * time.Second})
	f.s.Inject(1, Fault{Status: 500})
	want := []fcmResp{
		{status: 503, errStatus: "UNAVAILABLE", errorCode: "UNAVAILABLE", retryAfter: "30"},
		{status: 500, errStatus: "INTERNAL", errorCode: "INTERNAL"},
		{status: 200}, {status: 200}, {status: 200},
		{status: 429, errStatus: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", retryAfter: "60"},
	}
	for i, w := range want {
		r := f.send(t, testProject, body)
		r.name, r.proto = "", 0
		if r != w {
			t.Fatalf("request %d: got %+v, want %+v", i, r, w)
		}
	}
	clk.add(20 * time.Second)
	if r := f.send(t, testProject, body); r.status != 429 || r.retryAfter != "40" {
		t.Fatalf("still over quota: %+v", r)
	}
	clk.add(40 * time.Second)
	if r := f.send(t, testProject, body); r.status != 200 {
		t.Fatalf("after the window: %+v", r)
	}
}

func TestFCMSimKnobs(t *testing.T) {
	const n = 150
	f := newFCMFixture(t, FCMConfig{Knobs: Knobs{ErrorRate: 0.1, InvalidTokenRate: 0.25,
		Latency: time.Millisecond, Jitter: time.Millisecond, RatePerSecond: 50000, Seed: 3}})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			f.send(t, testProject, msg(fmt.Sprintf(`"token":"tok-%d"`, i)))
		})
	}
	wg.Wait()
	st := f.s.Stats()
	dead := 0
	for i := range n {
		tok := fmt.Sprintf("tok-%d", i)
		if IsDeadToken(tok, 0.25, 3) {
			dead++
			if st.PerToken[tok] != 0 {
				t.Fatalf("dead token %s accepted", tok)
			}
		}
	}
	errs := st.ByStatus[500] + st.ByStatus[503]
	if st.Requests != n || errs == 0 || st.ByStatus[404] == 0 || st.Accepted+st.ByStatus[404]+errs != n ||
		int(st.ByStatus[404]) > dead {
		t.Fatalf("stats %+v (dead %d)", st, dead)
	}
}

func TestFCMSimHTTP1(t *testing.T) {
	f := newFCMFixture(t, FCMConfig{})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: f.s.ClientTLS().Clone()}}
	c.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"http/1.1"}
	req, _ := http.NewRequest(http.MethodPost, f.s.URL()+"/v1/projects/"+testProject+"/messages:send",
		strings.NewReader(msg(`"token":"`+testFCMToken+`"`)))
	req.Header.Set("Authorization", "Bearer "+f.access)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 1 {
		t.Fatalf("got %d over HTTP/%d", resp.StatusCode, resp.ProtoMajor)
	}
}
