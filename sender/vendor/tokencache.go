package vendor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// MintFunc obtains a new auth token from a vendor's auth endpoint and says how long it is
// valid. A *CredError means the vendor refused our app's keys (the pool's breaker opens);
// other errors are transient.
type MintFunc func(ctx context.Context) (token string, life time.Duration, err error)

// TokenCache caches the auth token of one app at a vendor that issues tokens from its own
// auth call (vivo authToken, OPPO auth_token): Token returns the cached token until it is
// RefreshEvery old or close to expiry, one mint runs at a time (singleflight) and every
// waiting request shares its result. Invalidate drops a token the gateway refused.
type TokenCache struct {
	mint    MintFunc
	refresh time.Duration
	timeout time.Duration
	now     func() time.Time

	sf singleflight.Group

	mu    sync.Mutex
	token string // guarded by mu
	renew time.Time

	mints atomic.Int64
}

// NewTokenCache returns a cache that renews a token refresh after it was minted (or earlier,
// RenewBefore its expiry, when its lifetime is shorter); timeout bounds one mint.
func NewTokenCache(mint MintFunc, refresh, timeout time.Duration) *TokenCache {
	return &TokenCache{mint: mint, refresh: refresh, timeout: timeout, now: time.Now}
}

// SetClock replaces the cache's clock (tests).
func (c *TokenCache) SetClock(now func() time.Time) { c.now = now }

// Mints counts the tokens obtained.
func (c *TokenCache) Mints() int64 { return c.mints.Load() }

// Token returns the cached token, minting a new one when none is cached or it is due.
func (c *TokenCache) Token(ctx context.Context) (string, error) {
	if t := c.cached(); t != "" {
		return t, nil
	}
	ch := c.sf.DoChan("token", func() (any, error) {
		if t := c.cached(); t != "" {
			return t, nil // minted by the flight that just ended
		}
		// Detached from the first caller: its cancellation must not fail the others.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		defer cancel()
		start := c.now()
		t, life, err := c.mint(fctx)
		if err != nil {
			return "", err
		}
		renew := min(c.refresh, life-RenewBefore(life))
		c.mu.Lock()
		c.token, c.renew = t, start.Add(renew)
		c.mu.Unlock()
		c.mints.Add(1)
		return t, nil
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

func (c *TokenCache) cached() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && c.now().Before(c.renew) {
		return c.token
	}
	return ""
}

// Invalidate drops token if it is still the cached one (the gateway refused it), so that the
// next request mints a new one; concurrent refusals of one token cause one mint.
func (c *TokenCache) Invalidate(token string) {
	c.mu.Lock()
	if c.token == token {
		c.token = ""
	}
	c.mu.Unlock()
}
