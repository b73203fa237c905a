package fcm

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"golang.org/x/sync/singleflight"
)

// tokenSource mints and caches the OAuth2 access token of one service account. Token returns
// the cached token until shortly before it expires; one refresh runs at a time (singleflight)
// and every waiting request shares its result.
type tokenSource struct {
	email, keyID, tokenURL string
	key                    *rsa.PrivateKey
	hc                     *http.Client
	timeout                time.Duration
	now                    func() time.Time

	sf singleflight.Group

	mu     sync.Mutex
	bearer string // "Bearer <access token>"
	renew  time.Time

	mints atomic.Int64 // access tokens obtained (tests, metrics)
}

// credError is a token-endpoint refusal of our service account: the pool's breaker opens.
type credError struct{ reason string }

func (e *credError) Error() string { return e.reason }

// bearer returns "Bearer <token>", minting a new access token when none is cached or it is
// about to expire.
func (s *tokenSource) token(ctx context.Context) (string, error) {
	s.mu.Lock()
	b, renew := s.bearer, s.renew
	s.mu.Unlock()
	if b != "" && s.now().Before(renew) {
		return b, nil
	}
	ch := s.sf.DoChan("token", func() (any, error) {
		s.mu.Lock()
		b, renew := s.bearer, s.renew
		s.mu.Unlock()
		if b != "" && s.now().Before(renew) {
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

// invalidate drops bearer if it is still the cached one (the gateway refused it), so that the
// next request mints a new token; concurrent refusals of the same token cause one refresh.
func (s *tokenSource) invalidate(bearer string) {
	s.mu.Lock()
	if s.bearer == bearer {
		s.bearer = ""
	}
	s.mu.Unlock()
}

// renewBefore is how long before expiry a token is replaced: a few minutes, as Google's
// libraries do, or a fifth of a short lifetime (simulators issue tokens of seconds).
func renewBefore(lifetime time.Duration) time.Duration {
	if m := lifetime / 5; m < 5*time.Minute {
		return m
	}
	return 5 * time.Minute
}

type tokenReply struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
	TokenType   string `json:"token_type"`
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

func (s *tokenSource) mint(ctx context.Context) (string, error) {
	now := s.now()       // the cache's clock (tests move it)
	signed := time.Now() // the assertion's: Google checks it against real time
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss":   s.email,
		"scope": Scope,
		"aud":   s.tokenURL,
		"iat":   signed.Unix(),
		"exp":   signed.Add(time.Hour).Unix(),
	})
	if s.keyID != "" {
		t.Header["kid"] = s.keyID
	}
	assertion, err := t.SignedString(s.key)
	if err != nil {
		return "", &credError{reason: "cannot sign the oauth2 assertion"}
	}
	form := url.Values{
		"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"},
		"assertion":  {assertion},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", &credError{reason: "bad token_uri"}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := s.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("cannot reach the oauth2 token endpoint: %w", err)
	}
	defer drainClose(res.Body)
	var r tokenReply
	body, err := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	if err != nil {
		return "", fmt.Errorf("cannot read the oauth2 token reply: %w", err)
	}
	_ = json.Unmarshal(body, &r) // an unreadable body is judged by its status below
	switch {
	case res.StatusCode == http.StatusOK && r.AccessToken != "":
	case res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 || res.StatusCode == http.StatusOK:
		return "", fmt.Errorf("oauth2 token endpoint answered status %d", res.StatusCode)
	default: // 400 invalid_grant, 401 invalid_client, ...: our service account is refused
		reason := r.Error
		if reason == "" {
			reason = fmt.Sprintf("status %d", res.StatusCode)
		}
		return "", &credError{reason: "oauth2 token refused: " + reason}
	}
	life := time.Duration(r.ExpiresIn) * time.Second
	if life <= 0 {
		life = time.Hour
	}
	b := "Bearer " + r.AccessToken
	s.mu.Lock()
	s.bearer, s.renew = b, now.Add(life-renewBefore(life))
	s.mu.Unlock()
	s.mints.Add(1)
	return b, nil
}
