package api

import (
	"context"
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Header names of the spec's authentication.
const (
	HeaderAppID = "X-SVC-Id"
	HeaderKey   = "X-SVC-Key"
	HeaderSign  = "X-SVC-Sign"
	HeaderProd  = "X-SVC-Prod"
)

// AppStore is what the API needs of the store for apps.
type AppStore interface {
	CreateApp(ctx context.Context, app push.App) error
	GetApp(ctx context.Context, appID string) (push.App, error)
	PutApp(ctx context.Context, app push.App) error
	ListApps(ctx context.Context) ([]push.App, error)
}

var errUnauthorized = push.Errorf(push.CodeUnauthorized, "unauthorized")

// authenticate checks X-SVC-Id with X-SVC-Key or X-SVC-Sign. Every failure (unknown app,
// wrong key, bad signature) reads the same "unauthorized" to the caller, except a missing
// header and a stale signature timestamp, which say what to fix.
func (s *Server) authenticate(ctx *fasthttp.RequestCtx, now time.Time) (*push.App, bool, *push.Error) {
	id := ctx.Request.Header.Peek(HeaderAppID)
	if len(id) == 0 {
		return nil, false, push.Errorf(push.CodeUnauthorized, "missing header %s", HeaderAppID)
	}
	key := ctx.Request.Header.Peek(HeaderKey)
	sign := ctx.Request.Header.Peek(HeaderSign)
	if len(key) == 0 && len(sign) == 0 {
		return nil, false, push.Errorf(push.CodeUnauthorized, "missing header %s or %s", HeaderKey, HeaderSign)
	}
	app, err := s.apps.get(context.Background(), string(id))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, false, errUnauthorized
		}
		s.log.Warn("cannot read app for authentication")
		return nil, false, push.Errorf(push.CodeUnavailable, "cannot check credentials now, retry later")
	}
	if len(key) > 0 {
		k, master := strings.CutSuffix(string(key), ",master")
		want := app.AppKey
		if master {
			want = app.MasterKey
		}
		if !equalSecret(k, want) {
			return nil, false, errUnauthorized
		}
		return app, master, nil
	}
	master, perr := checkSign(string(sign), app, now, s.cfg.SignSkew)
	if perr != nil {
		return nil, false, perr
	}
	return app, master, nil
}

// checkSign verifies "<md5hex(timestamp+key)>,<timestamp ms>[,master]" (ORIGINAL-NOTES §2.1):
// lowercase hex only; the timestamp must be within skew of now.
func checkSign(h string, app *push.App, now time.Time, skew time.Duration) (master bool, _ *push.Error) {
	parts := strings.Split(h, ",")
	switch {
	case len(parts) == 3 && parts[2] == "master":
		master = true
	case len(parts) == 2:
	default:
		return false, push.Errorf(push.CodeUnauthorized, "malformed %s: want <sign>,<timestamp>[,master]", HeaderSign)
	}
	ts, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || ts <= 0 {
		return false, push.Errorf(push.CodeUnauthorized, "malformed %s timestamp: want Unix milliseconds", HeaderSign)
	}
	d := now.Sub(time.UnixMilli(ts))
	if d > skew || d < -skew {
		return false, push.Errorf(push.CodeUnauthorized, "%s timestamp is more than %s away from the server clock", HeaderSign, skew)
	}
	key := app.AppKey
	if master {
		key = app.MasterKey
	}
	if !equalSecret(parts[0], Sign(parts[1], key)) {
		return false, errUnauthorized
	}
	return master, nil
}

// Sign is the X-SVC-Sign digest: lowercase hex MD5 of the timestamp followed by the key.
func Sign(timestampMillis, key string) string {
	sum := md5.Sum([]byte(timestampMillis + key))
	return hex.EncodeToString(sum[:])
}

// equalSecret compares in time independent of where the strings differ. An empty expected
// secret never matches.
func equalSecret(got, want string) bool {
	if want == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (s *Server) authenticateAdmin(ctx *fasthttp.RequestCtx) *push.Error {
	if s.cfg.AdminToken == "" {
		return push.Errorf(push.CodeForbidden, "the admin API is disabled: start pushd with PUSHD_ADMIN_TOKEN set")
	}
	auth := string(ctx.Request.Header.Peek("Authorization"))
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || !equalSecret(tok, s.cfg.AdminToken) {
		return push.Errorf(push.CodeUnauthorized, "admin API needs Authorization: Bearer <PUSHD_ADMIN_TOKEN>")
	}
	return nil
}

// appCache keeps apps read from the store for a short TTL. Admin updates invalidate their
// entry at once on this node; other nodes see the change within the TTL.
type appCache struct {
	src AppStore
	ttl time.Duration
	now func() time.Time

	mu      sync.RWMutex
	entries map[string]appEntry
}

type appEntry struct {
	app     *push.App // read-only once cached
	expires time.Time
}

func newAppCache(src AppStore, ttl time.Duration, now func() time.Time) *appCache {
	return &appCache{src: src, ttl: ttl, now: now, entries: make(map[string]appEntry)}
}

func (c *appCache) get(ctx context.Context, id string) (*push.App, error) {
	now := c.now()
	c.mu.RLock()
	e, ok := c.entries[id]
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.app, nil
	}
	app, err := c.src.GetApp(ctx, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.entries) > 100_000 { // bound memory; apps are few, ids from callers are not
		clear(c.entries)
	}
	c.entries[id] = appEntry{app: &app, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return &app, nil
}

func (c *appCache) invalidate(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}
