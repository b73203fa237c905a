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

// The original service's names of the same headers, which its SDKs send unchanged
// (docs/migration.md, "Identity and SDKs"): X-LC-* by every current SDK, X-AVOSCloud-* by
// older ones and many hand-written REST clients, X-Uluru-* by the oldest (the original's
// LeanEngine SDKs still read all three). The *-Master-Key headers carry the master key
// without the ",master" suffix.
const (
	HeaderLCAppID   = "X-LC-Id"
	HeaderLCKey     = "X-LC-Key"
	HeaderLCSign    = "X-LC-Sign"
	HeaderLCProd    = "X-LC-Prod"
	HeaderLCSession = "X-LC-Session"

	HeaderAVAppID     = "X-AVOSCloud-Application-Id"
	HeaderAVKey       = "X-AVOSCloud-Application-Key"
	HeaderAVMasterKey = "X-AVOSCloud-Master-Key"
	HeaderAVSign      = "X-AVOSCloud-Request-Sign"
	HeaderAVProd      = "X-AVOSCloud-Application-Production"
	HeaderAVSession   = "X-AVOSCloud-Session-Token"

	HeaderUluruAppID     = "X-Uluru-Application-Id"
	HeaderUluruKey       = "X-Uluru-Application-Key"
	HeaderUluruMasterKey = "X-Uluru-Master-Key"
	HeaderUluruProd      = "X-Uluru-Application-Production"
)

// Each credential is read from the first of its names the request carries, in this order:
// pushd's own name, then the original's current one, then the older ones. A request that
// mixes families (X-SVC-Id with X-LC-Key) is read the same way, one header at a time.
var (
	namesAppID     = []string{HeaderAppID, HeaderLCAppID, HeaderAVAppID, HeaderUluruAppID}
	namesKey       = []string{HeaderKey, HeaderLCKey, HeaderAVKey, HeaderUluruKey}
	namesMasterKey = []string{HeaderAVMasterKey, HeaderUluruMasterKey}
	namesSign      = []string{HeaderSign, HeaderLCSign, HeaderAVSign}
	namesProd      = []string{HeaderProd, HeaderLCProd, HeaderAVProd, HeaderUluruProd}
)

// peekFirst returns the value of the first of names the request carries with a non-empty
// value, and that name.
func peekFirst(h *fasthttp.RequestHeader, names []string) ([]byte, string) {
	for _, n := range names {
		if v := h.Peek(n); len(v) > 0 {
			return v, n
		}
	}
	return nil, names[0]
}

// ProdHeader is the value of the request's production-environment header (X-SVC-Prod,
// X-LC-Prod or X-AVOSCloud-Application-Production, first present wins), "" when absent.
// Push calls read it for the default of "prod".
func ProdHeader(ctx *fasthttp.RequestCtx) string {
	v, _ := peekFirst(&ctx.Request.Header, namesProd)
	return string(v)
}

// keyHeader returns the key credential: the first application-key header as sent ("<key>"
// or "<key>,master"), or else the first master-key header as "<key>,master".
func keyHeader(h *fasthttp.RequestHeader) []byte {
	if v, _ := peekFirst(h, namesKey); len(v) > 0 {
		return v
	}
	if v, _ := peekFirst(h, namesMasterKey); len(v) > 0 {
		return append(append([]byte(nil), v...), ",master"...)
	}
	return nil
}

// AppStore is what the API needs of the store for apps.
type AppStore interface {
	CreateApp(ctx context.Context, app push.App) error
	GetApp(ctx context.Context, appID string) (push.App, error)
	PutApp(ctx context.Context, app push.App) error
	ListApps(ctx context.Context) ([]push.App, error)
}

var errUnauthorized = push.Errorf(push.CodeUnauthorized, "unauthorized")

// authenticate checks X-SVC-Id with X-SVC-Key or X-SVC-Sign (or the original service's
// names of them, X-LC-* and X-AVOSCloud-*). Every failure (unknown app, wrong key, bad
// signature) reads the same "unauthorized" to the caller, except a missing header and a
// stale signature timestamp, which say what to fix.
func (s *Server) authenticate(ctx *fasthttp.RequestCtx, now time.Time) (*push.App, bool, *push.Error) {
	h := &ctx.Request.Header
	id, _ := peekFirst(h, namesAppID)
	if len(id) == 0 {
		return nil, false, push.Errorf(push.CodeUnauthorized, "missing header %s (or %s)", HeaderAppID, HeaderLCAppID)
	}
	key := keyHeader(h)
	sign, signName := peekFirst(h, namesSign)
	if len(key) == 0 && len(sign) == 0 {
		return nil, false, push.Errorf(push.CodeUnauthorized, "missing header %s or %s (or %s or %s)", HeaderKey, HeaderSign, HeaderLCKey, HeaderLCSign)
	}
	// A signature's form and clock are checked before the app is read, so that these answers
	// are the same whether the app exists or not.
	var sg signature
	if len(key) == 0 {
		var perr *push.Error
		if sg, perr = parseSignNamed(string(sign), signName, now, s.cfg.SignSkew); perr != nil {
			return nil, false, perr
		}
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
	if !sg.valid(app) {
		return nil, false, errUnauthorized
	}
	return app, sg.master, nil
}

// signature is a parsed X-SVC-Sign: "<md5hex(timestamp+key)>,<timestamp ms>[,master]"
// (ORIGINAL-NOTES §2.1), lowercase hex only.
type signature struct {
	sum, timestamp string
	master         bool
}

// parseSign reads an X-SVC-Sign value and checks that its timestamp is within skew of now.
func parseSign(h string, now time.Time, skew time.Duration) (signature, *push.Error) {
	return parseSignNamed(h, HeaderSign, now, skew)
}

// parseSignNamed is parseSign for a value that came in the header named name (the errors
// name the header the client sent).
func parseSignNamed(h, name string, now time.Time, skew time.Duration) (signature, *push.Error) {
	parts := strings.Split(h, ",")
	sg := signature{}
	switch {
	case len(parts) == 3 && parts[2] == "master":
		sg.master = true
	case len(parts) == 2:
	default:
		return sg, push.Errorf(push.CodeUnauthorized, "malformed %s: want <sign>,<timestamp>[,master]", name)
	}
	ts, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || ts <= 0 {
		return sg, push.Errorf(push.CodeUnauthorized, "malformed %s timestamp: want Unix milliseconds", name)
	}
	d := now.Sub(time.UnixMilli(ts))
	if d > skew || d < -skew {
		return sg, push.Errorf(push.CodeUnauthorized, "%s timestamp is more than %s away from the server clock", name, skew)
	}
	sg.sum, sg.timestamp = parts[0], parts[1]
	return sg, nil
}

// valid says whether the signature was made with app's key (its master key for a master
// signature).
func (sg signature) valid(app *push.App) bool {
	key := app.AppKey
	if sg.master {
		key = app.MasterKey
	}
	return equalSecret(sg.sum, Sign(sg.timestamp, key))
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
	// The scheme is case-insensitive and may be followed by more than one space (RFC 7235).
	scheme, tok, _ := strings.Cut(strings.TrimSpace(string(ctx.Request.Header.Peek("Authorization"))), " ")
	if !strings.EqualFold(scheme, "Bearer") || !equalSecret(strings.TrimLeft(tok, " \t"), s.cfg.AdminToken) {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="pushd admin"`)
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
	// gen counts invalidations, so that a store read that an invalidation overtook does not
	// cache what it read (the update it missed would then wait for the TTL).
	gen uint64
	// afterRead, when set, runs between the store read and the fill (tests).
	afterRead func()
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
	gen := c.gen
	c.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.app, nil
	}
	app, err := c.src.GetApp(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.afterRead != nil {
		c.afterRead()
	}
	c.mu.Lock()
	if c.gen == gen {
		if len(c.entries) > 100_000 { // bound memory; apps are few, ids from callers are not
			clear(c.entries)
		}
		c.entries[id] = appEntry{app: &app, expires: now.Add(c.ttl)}
	}
	c.mu.Unlock()
	return &app, nil
}

func (c *appCache) invalidate(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	c.gen++
	c.mu.Unlock()
}
