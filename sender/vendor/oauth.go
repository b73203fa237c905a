package vendor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// TokenSource obtains and caches the OAuth2 access token of one app by the client-credentials
// grant (HMS, Honor). Token returns the cached token until shortly before it expires; one
// refresh runs at a time (singleflight) and every waiting request shares its result.
type TokenSource struct {
	tokenURL, clientID, clientSecret string
	hc                               *http.Client
	timeout                          time.Duration
	now                              func() time.Time

	sf singleflight.Group

	mu     sync.Mutex
	bearer string // "Bearer <access token>", guarded by mu
	renew  time.Time

	mints atomic.Int64
}

// NewTokenSource returns the token source of one client id and secret.
func NewTokenSource(tokenURL, clientID, clientSecret string, hc *http.Client, timeout time.Duration) *TokenSource {
	return &TokenSource{tokenURL: tokenURL, clientID: clientID, clientSecret: clientSecret, hc: hc, timeout: timeout, now: time.Now}
}

// CredError is the token endpoint refusing our client id or secret: the pool's breaker opens.
type CredError struct{ Reason string }

func (e *CredError) Error() string { return e.Reason }

// Mints counts the access tokens obtained.
func (s *TokenSource) Mints() int64 { return s.mints.Load() }

// SetClock replaces the cache's clock (tests).
func (s *TokenSource) SetClock(now func() time.Time) { s.now = now }

// Token returns "Bearer <token>", obtaining a new access token when none is cached or it is
// about to expire.
func (s *TokenSource) Token(ctx context.Context) (string, error) {
	if b := s.cached(); b != "" {
		return b, nil
	}
	ch := s.sf.DoChan("token", func() (any, error) {
		if b := s.cached(); b != "" {
			return b, nil // refreshed by the flight that just ended
		}
		// Detached from the first caller: its cancellation must not fail the others.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		defer cancel()
		return s.mint(fctx)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (s *TokenSource) cached() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bearer != "" && s.now().Before(s.renew) {
		return s.bearer
	}
	return ""
}

// Invalidate drops bearer if it is still the cached one (the gateway refused it), so that the
// next request obtains a new token; concurrent refusals of one token cause one refresh.
func (s *TokenSource) Invalidate(bearer string) {
	s.mu.Lock()
	if s.bearer == bearer {
		s.bearer = ""
	}
	s.mu.Unlock()
}

// RenewBefore is how long before expiry a token is replaced: five minutes, or a fifth of a
// short lifetime (simulators issue tokens of seconds).
func RenewBefore(lifetime time.Duration) time.Duration {
	return min(lifetime/5, 5*time.Minute)
}

type tokenReply struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
	Error       any    `json:"error"` // HMS answers a number, RFC 6749 a string
	Description string `json:"error_description"`
}

// parseTokenReply reads a token endpoint's answer: the access token and its lifetime (1 h
// when the reply gives none or a nonsensical one), or an error: a *CredError when our client
// id or secret is refused (4xx other than 429), a plain error for what may pass (429, 5xx, a
// 200 without a token; an unreadable body is judged by its status).
func parseTokenReply(status int, body []byte) (string, time.Duration, error) {
	var r tokenReply
	_ = json.Unmarshal(body, &r)
	switch {
	case status == http.StatusOK && r.AccessToken != "":
	case status == http.StatusTooManyRequests || status >= 500 || status == http.StatusOK:
		return "", 0, fmt.Errorf("oauth2 token endpoint answered status %d", status)
	default: // 400 invalid_client, 401, ...: our client id or secret is refused
		reason := fmt.Sprintf("status %d", status)
		if r.Error != nil {
			reason = clip(fmt.Sprint(r.Error))
		}
		if r.Description != "" {
			reason += ": " + clip(r.Description)
		}
		return "", 0, &CredError{Reason: "oauth2 token refused: " + reason}
	}
	life := time.Duration(r.ExpiresIn) * time.Second
	if r.ExpiresIn <= 0 || r.ExpiresIn > maxTokenLife || life <= 0 {
		life = time.Hour
	}
	return r.AccessToken, life, nil
}

// maxTokenLife bounds the expires_in taken from a token reply (seconds): a larger one (or one
// that overflows a Duration) is not believed, and the token is renewed as a 1-hour one.
const maxTokenLife = 30 * 24 * 3600

// maxReply bounds the token and send replies read.
const maxReply = 64 << 10

func (s *TokenSource) mint(ctx context.Context) (string, error) {
	now := s.now()
	form := url.Values{
		"grant_type":    {"client_credentials"},
		"client_id":     {s.clientID},
		"client_secret": {s.clientSecret},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", &CredError{Reason: "bad token URL"}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := s.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("cannot reach the oauth2 token endpoint: %w", err)
	}
	defer DrainClose(res.Body)
	body, err := io.ReadAll(io.LimitReader(res.Body, maxReply))
	if err != nil {
		return "", fmt.Errorf("cannot read the oauth2 token reply: %w", err)
	}
	token, life, err := parseTokenReply(res.StatusCode, body)
	if err != nil {
		return "", err
	}
	b := "Bearer " + token
	s.mu.Lock()
	s.bearer, s.renew = b, now.Add(life-RenewBefore(life))
	s.mu.Unlock()
	s.mints.Add(1)
	return b, nil
}
