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

// honorHarness is an Honor simulator on a settable clock with one app's client, speaking raw
// HTTP to it.
type honorHarness struct {
	s      *Honor
	c      *http.Client
	mu     sync.Mutex
	now    time.Time
	id     string
	secret string
}

func newHonorHarness(t *testing.T, cfg HonorConfig) *honorHarness {
	t.Helper()
	h := &honorHarness{now: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	cfg.Now = func() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.now }
	s, err := NewHonor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h.s = s
	h.c = &http.Client{Transport: &http.Transport{TLSClientConfig: s.ClientTLS(), ForceAttemptHTTP2: true}, Timeout: 10 * time.Second}
	h.id, h.secret = s.NewApp("104455667")
	return h
}

func (h *honorHarness) advance(d time.Duration) { h.mu.Lock(); h.now = h.now.Add(d); h.mu.Unlock() }

// token asks the token endpoint; it returns the status and the access token (if any).
func (h *honorHarness) token(t *testing.T, form url.Values) (int, string) {
	t.Helper()
	res, err := h.c.PostForm(h.s.TokenURL(), form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var r struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	_ = json.NewDecoder(res.Body).Decode(&r)
	return res.StatusCode, r.AccessToken
}

// send posts body to app's sendMessage with bearer; it returns the status and the reply.
func (h *honorHarness) send(t *testing.T, app, bearer, body string) (int, honorReply) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.s.URL()+"/api/v1/"+app+"/sendMessage", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	req.Header.Set("timestamp", "1764064800000")
	res, err := h.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var r honorReply
	_ = json.Unmarshal(b, &r)
	return res.StatusCode, r
}

func honorBody(tokens ...string) string {
	tb, _ := json.Marshal(tokens)
	return `{"token":` + string(tb) + `,"android":{"ttl":"3600s","notification":{"title":"t","body":"b","clickAction":{"type":3}}}}`
}

// TestHonorSimulatorChecks: the token endpoint checks the grant and the client; sends check
// the bearer (its app and expiry) and each request rule has its code; lists name only the
// tokens that failed.
func TestHonorSimulatorChecks(t *testing.T) {
	h := newHonorHarness(t, HonorConfig{})
	good := url.Values{"grant_type": {"client_credentials"}, "client_id": {h.id}, "client_secret": {h.secret}}
	for _, bad := range []url.Values{
		{"grant_type": {"password"}, "client_id": {h.id}, "client_secret": {h.secret}},
		{"grant_type": {"client_credentials"}, "client_id": {h.id}, "client_secret": {"wrong"}},
		{"grant_type": {"client_credentials"}, "client_id": {"nobody"}, "client_secret": {h.secret}},
	} {
		if st, tok := h.token(t, bad); st != http.StatusBadRequest || tok != "" {
			t.Errorf("token for %v: %d %q, want 400", bad, st, tok)
		}
	}
	st, bearer := h.token(t, good)
	if st != http.StatusOK || bearer == "" {
		t.Fatalf("token: %d %q", st, bearer)
	}
	if st, r := h.send(t, "104455667", "", honorBody("AQAAAA1")); st != 401 || r.Code != HonorAuthError {
		t.Errorf("no bearer: %d %+v", st, r)
	}
	if st, r := h.send(t, "999", bearer, honorBody("AQAAAA1")); st != 401 || r.Code != HonorAuthError {
		t.Errorf("bearer of another app: %d %+v", st, r)
	}
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("AQAAAA%04d", i)
	}
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"token":[],"android":{}}`, HonorTokenCount},
		{honorBody(many...), HonorTokenCount},
		{`not json`, HonorBadStructure},
		{`{"token":["AQAAAA1"],"data":{"k":1}}`, HonorParamError},
		{`{"token":["AQAAAA1"],"android":{"ttl":"1h","notification":{"title":"t","body":"b","clickAction":{"type":3}}}}`, HonorBadStructure},
		{`{"token":["AQAAAA1"],"android":{"ttl":"9999999s","notification":{"title":"t","body":"b","clickAction":{"type":3}}}}`, HonorBadTTL},
		{`{"token":["AQAAAA1"],"android":{"notification":{"title":"","body":"b","clickAction":{"type":3}}}}`, HonorParamError},
		{`{"token":["AQAAAA1"],"android":{"notification":{"title":"t","body":"b"}}}`, HonorParamError},
		{`{"token":["AQAAAA1"],"android":{"notification":{"title":"t","body":"b","clickAction":{"type":2}}}}`, HonorParamError},
		{`{"token":["AQAAAA1"],"android":{"notification":{"title":"t","body":"b","importance":"HIGH","clickAction":{"type":3}}}}`, HonorParamError},
		{`{"token":["AQAAAA1"],"android":{"targetUserType":2,"notification":{"title":"t","body":"b","clickAction":{"type":3}}}}`, HonorParamError},
		{`{"token":["AQAAAA1"],"data":"` + strings.Repeat("x", 5000) + `"}`, HonorTooLarge},
	} {
		if _, r := h.send(t, "104455667", bearer, c.body); r.Code != c.code {
			t.Errorf("%.80s: code %d, want %d", c.body, r.Code, c.code)
		}
	}
	h.s.MarkInvalid("AQAAAAdead")
	h.s.MarkFailing("AQAAAAbusy", true)
	st, r := h.send(t, "104455667", bearer, honorBody("AQAAAAok", "AQAAAAdead", "AQAAAAbusy"))
	if st != 200 || r.Code != HonorOK || r.Data == nil || !r.Data.SendResult ||
		strings.Join(r.Data.ExpireTokens, ",") != "AQAAAAdead" || strings.Join(r.Data.FailTokens, ",") != "AQAAAAbusy" {
		t.Errorf("mixed tokens: %d %+v", st, r)
	}
	if _, r := h.send(t, "104455667", bearer, honorBody("AQAAAAdead")); r.Code != HonorAllInvalid {
		t.Errorf("all invalid: %+v", r)
	}
	if st := h.s.Stats(); st.PerToken["AQAAAAok"] != 1 || st.Accepted != 1 || st.AuthTokens != 1 {
		t.Errorf("stats %+v", st)
	}
	h.advance(2 * time.Hour)
	if _, r := h.send(t, "104455667", bearer, honorBody("AQAAAAok")); r.Code != HonorTokenExpired {
		t.Errorf("expired bearer: %+v", r)
	}
}

// TestHonorSimulatorQuotaRateOutage: the day quota answers its code until the next China day
// (test-user sends exempt); the per-second rate answers 503 with Retry-After; an outage
// answers its status or drops the connection, then sends work again.
func TestHonorSimulatorQuotaRateOutage(t *testing.T) {
	h := newHonorHarness(t, HonorConfig{DayQuota: 2, TokensPerSecond: 5, AccessTokenTTL: 48 * time.Hour})
	_, bearer := h.token(t, url.Values{"grant_type": {"client_credentials"}, "client_id": {h.id}, "client_secret": {h.secret}})
	if _, r := h.send(t, "104455667", bearer, honorBody("AQAAAA1", "AQAAAA2")); r.Code != HonorOK {
		t.Fatalf("within quota: %+v", r)
	}
	if st, r := h.send(t, "104455667", bearer, honorBody("AQAAAA3")); st != 200 || r.Code != HonorDefaultQuotaCode {
		t.Fatalf("past quota: %d %+v", st, r)
	}
	test := `{"token":["AQAAAA3"],"android":{"targetUserType":1,"notification":{"title":"t","body":"b","clickAction":{"type":3}}}}`
	if _, r := h.send(t, "104455667", bearer, test); r.Code != HonorOK {
		t.Fatalf("test-user send past quota: %+v", r)
	}
	h.advance(14 * time.Hour) // 10:00 UTC + 14 h = 08:00 next day in China
	if _, r := h.send(t, "104455667", bearer, honorBody("AQAAAA4")); r.Code != HonorOK {
		t.Fatalf("next day: %+v", r)
	}
	if st, _ := h.send(t, "104455667", bearer, honorBody("AQAAAA5", "AQAAAA6", "AQAAAA7", "AQAAAA8", "AQAAAA9", "AQAAAA10")); st != http.StatusServiceUnavailable {
		t.Fatalf("beyond 5 tokens/s: status %d, want 503", st)
	}
	h.advance(2 * time.Second)

	if err := h.s.StartOutage(Outage{Mode: OutageStatus, Status: 502, For: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.send(t, "104455667", bearer, honorBody("AQAAAA8")); st != 502 {
		t.Fatalf("outage: status %d, want 502", st)
	}
	if err := h.s.StartOutage(Outage{Mode: OutageDrop, For: time.Minute}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, h.s.URL()+"/api/v1/104455667/sendMessage", strings.NewReader(honorBody("AQAAAA8")))
	req.Header.Set("Authorization", "Bearer "+bearer)
	if res, err := h.c.Do(req); err == nil {
		res.Body.Close()
		t.Fatalf("dropped connection answered %d", res.StatusCode)
	}
	h.s.EndOutage()
	if _, r := h.send(t, "104455667", bearer, honorBody("AQAAAA8")); r.Code != HonorOK {
		t.Fatalf("after the outage: %+v", r)
	}
	if st := h.s.Stats(); st.Outage != 2 {
		t.Errorf("outage hits %d, want 2", st.Outage)
	}
}
