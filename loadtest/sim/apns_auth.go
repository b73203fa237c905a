package sim

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"sync"
)

// Provider-token timing rules (gateways.md §1.2): a token is valid for one hour after its iat,
// and a connection may switch to a newer token at most once every 20 minutes.
const (
	jwtMaxAge       = 3600 // seconds
	jwtRefreshFloor = 1200 // seconds
	jwtFutureSkew   = 300  // seconds an iat may lie in the future (clock skew) before it is invalid
	jwtCacheMax     = 4096 // verified tokens kept; a sender uses one per team per ~50 min
)

// APNsKey is a token-auth signing key the simulator trusts.
type APNsKey struct {
	TeamID string
	Public *ecdsa.PublicKey
	// Env restricts the key to "production" or "sandbox"; "" allows both. A key used against
	// the other environment gets 403 BadEnvironmentKeyInToken.
	Env string
}

// APNsClientCert is a TLS client certificate the simulator trusts for certificate auth.
type APNsClientCert struct {
	Cert   *x509.Certificate
	Topics []string // bundle ids it may push to; the first one is the default topic
	Env    string   // "production", "sandbox" or "" (universal)
}

// jwtInfo is the cached result of verifying one provider token string.
type jwtInfo struct {
	kid, team string
	env       string
	iat       int64
	ok        bool
}

// apnsAuth holds keys, certificates and the verification cache.
type apnsAuth struct {
	mu    sync.RWMutex
	keys  map[string]APNsKey
	certs map[[32]byte]*APNsClientCert
	cache map[string]jwtInfo // token string → result; cleared whenever keys change or it fills
}

func newAPNsAuth() *apnsAuth {
	return &apnsAuth{
		keys:  make(map[string]APNsKey),
		certs: make(map[[32]byte]*APNsClientCert),
		cache: make(map[string]jwtInfo),
	}
}

func (a *apnsAuth) addKey(kid string, k APNsKey) {
	a.mu.Lock()
	a.keys[kid] = k
	clear(a.cache)
	a.mu.Unlock()
}

func (a *apnsAuth) addCert(c APNsClientCert) {
	a.mu.Lock()
	a.certs[sha256.Sum256(c.Cert.Raw)] = &c
	a.mu.Unlock()
}

func (a *apnsAuth) cert(raw []byte) *APNsClientCert {
	fp := sha256.Sum256(raw)
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.certs[fp]
}

// verify checks a provider token's signature and issuer. Each distinct token string is
// verified once (ECDSA costs ~40 µs); repeats are a map lookup. fresh reports a first sight.
func (a *apnsAuth) verify(tok string) (info jwtInfo, fresh bool) {
	a.mu.RLock()
	info, hit := a.cache[tok]
	a.mu.RUnlock()
	if hit {
		return info, false
	}
	info = a.verifySlow(tok)
	a.mu.Lock()
	if len(a.cache) >= jwtCacheMax {
		clear(a.cache)
	}
	a.cache[tok] = info
	a.mu.Unlock()
	return info, info.ok
}

func (a *apnsAuth) verifySlow(tok string) jwtInfo {
	var bad jwtInfo
	h, rest, ok := strings.Cut(tok, ".")
	if !ok {
		return bad
	}
	c, sig, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(sig, ".") {
		return bad
	}
	enc := base64.RawURLEncoding
	hb, err := enc.DecodeString(h)
	if err != nil {
		return bad
	}
	var head struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if json.Unmarshal(hb, &head) != nil || head.Alg != "ES256" || head.Kid == "" {
		return bad
	}
	cb, err := enc.DecodeString(c)
	if err != nil {
		return bad
	}
	var claims struct {
		Iss string          `json:"iss"`
		Iat json.RawMessage `json:"iat"`
	}
	if json.Unmarshal(cb, &claims) != nil {
		return bad
	}
	iat, ok := parseUnix(claims.Iat)
	if !ok {
		return bad
	}
	sb, err := enc.DecodeString(sig)
	if err != nil || len(sb) != 64 {
		return bad
	}
	a.mu.RLock()
	key, known := a.keys[head.Kid]
	a.mu.RUnlock()
	if !known || key.Public == nil || claims.Iss != key.TeamID {
		return bad
	}
	sum := sha256.Sum256([]byte(tok[:len(h)+1+len(c)]))
	r := new(big.Int).SetBytes(sb[:32])
	s := new(big.Int).SetBytes(sb[32:])
	if !ecdsa.Verify(key.Public, sum[:], r, s) {
		return bad
	}
	return jwtInfo{kid: head.Kid, team: key.TeamID, env: key.Env, iat: iat, ok: true}
}

// parseUnix reads a JSON integer of seconds (no fraction, no exponent, no quotes).
func parseUnix(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || len(raw) > 18 {
		return 0, false
	}
	var n int64
	for _, ch := range raw {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	return n, true
}

// apnsConn is the per-connection provider-token state APNs keeps: the connection's key id and
// its current token, for UnrelatedKeyIdInToken and TooManyProviderTokenUpdates.
type apnsConn struct {
	mu    sync.Mutex
	kid   string
	token string
	iat   int64
}

type apnsConnKey struct{}

// admit applies the per-connection rules to a verified token; it returns the reason to reject
// with, or "".
func (c *apnsConn) admit(tok string, info jwtInfo) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.kid == "":
		c.kid, c.token, c.iat = info.kid, tok, info.iat
	case c.kid != info.kid:
		return reasonUnrelatedKeyID
	case c.token == tok:
	case info.iat < c.iat:
		// An older, still valid token in flight while workers switch over: accept it.
	case info.iat-c.iat < jwtRefreshFloor:
		return reasonTooManyProviderTokenUpdates
	default:
		c.token, c.iat = tok, info.iat
	}
	return ""
}
