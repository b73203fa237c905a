package sim

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// APNs reasons (gateways.md §1.5), spelled as Apple and sideshow/apns2 spell them.
const (
	reasonBadDeviceToken              = "BadDeviceToken"
	reasonDeviceTokenNotForTopic      = "DeviceTokenNotForTopic"
	reasonMissingDeviceToken          = "MissingDeviceToken"
	reasonBadTopic                    = "BadTopic"
	reasonMissingTopic                = "MissingTopic"
	reasonTopicDisallowed             = "TopicDisallowed"
	reasonBadMessageID                = "BadMessageId"
	reasonBadExpirationDate           = "BadExpirationDate"
	reasonBadPriority                 = "BadPriority"
	reasonBadCollapseID               = "BadCollapseId"
	reasonInvalidPushType             = "InvalidPushType"
	reasonDuplicateHeaders            = "DuplicateHeaders"
	reasonPayloadEmpty                = "PayloadEmpty"
	reasonExpiredProviderToken        = "ExpiredProviderToken"
	reasonInvalidProviderToken        = "InvalidProviderToken"
	reasonMissingProviderToken        = "MissingProviderToken"
	reasonBadCertificate              = "BadCertificate"
	reasonBadCertificateEnvironment   = "BadCertificateEnvironment"
	reasonBadEnvironmentKeyInToken    = "BadEnvironmentKeyInToken"
	reasonUnrelatedKeyID              = "UnrelatedKeyIdInToken"
	reasonBadPath                     = "BadPath"
	reasonMethodNotAllowed            = "MethodNotAllowed"
	reasonUnregistered                = "Unregistered"
	reasonExpiredToken                = "ExpiredToken"
	reasonPayloadTooLarge             = "PayloadTooLarge"
	reasonTooManyRequests             = "TooManyRequests"
	reasonTooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
	reasonInternalServerError         = "InternalServerError"
	reasonServiceUnavailable          = "ServiceUnavailable"
	reasonShutdown                    = "Shutdown"
)

// apnsStatus is the HTTP status APNs answers with for each reason.
var apnsStatus = map[string]int{
	reasonBadDeviceToken: 400, reasonDeviceTokenNotForTopic: 400, reasonMissingDeviceToken: 400,
	reasonBadTopic: 400, reasonMissingTopic: 400, reasonTopicDisallowed: 400, reasonBadMessageID: 400,
	reasonBadExpirationDate: 400, reasonBadPriority: 400, reasonBadCollapseID: 400,
	reasonInvalidPushType: 400, reasonDuplicateHeaders: 400, reasonPayloadEmpty: 400, "IdleTimeout": 400,
	reasonExpiredProviderToken: 403, reasonInvalidProviderToken: 403, reasonMissingProviderToken: 403,
	reasonBadCertificate: 403, reasonBadCertificateEnvironment: 403, reasonBadEnvironmentKeyInToken: 403,
	reasonUnrelatedKeyID: 403, "Forbidden": 403,
	reasonBadPath: 404, reasonMethodNotAllowed: 405,
	reasonUnregistered: 410, reasonExpiredToken: 410,
	reasonPayloadTooLarge: 413,
	reasonTooManyRequests: 429, reasonTooManyProviderTokenUpdates: 429,
	reasonInternalServerError: 500, reasonServiceUnavailable: 503, reasonShutdown: 503,
}

// Payload limits (gateways.md §1.4).
const (
	apnsMaxPayload     = 4096
	apnsMaxVoIPPayload = 5120
	apnsMaxCollapseID  = 64
)

// pushTypeSuffix is the apns-topic suffix each push type requires (gateways.md §1.3); types
// absent from the map are unknown (400 InvalidPushType).
var pushTypeSuffix = map[string]string{
	"alert": "", "background": "", "mdm": "", "widgets": "", "controls": "",
	"voip": ".voip", "complication": ".complication", "fileprovider": ".pushkit.fileprovider",
	"location": ".location-query", "liveactivity": ".push-type.liveactivity", "pushtotalk": ".voip-ptt",
}

// APNsConfig configures an APNs simulator. The zero value serves production on a random
// loopback port, trusts no keys (AddKey) and accepts any topic.
type APNsConfig struct {
	Addr    string // listen address; default 127.0.0.1:0
	Sandbox bool   // serve the development environment (adds apns-unique-id, checks key/cert env)

	Keys        map[string]APNsKey  // key id → signing key
	Topics      map[string][]string // team id → allowed bundle ids; a team not listed may use any topic
	ClientCerts []APNsClientCert

	// MaxConcurrentStreams is advertised in SETTINGS; default 1000 (Apple's observed range).
	MaxConcurrentStreams int
	// AnyTokenLength accepts any even-length hex device token of 16–200 digits instead of
	// exactly 64 (Apple warns tokens may grow).
	AnyTokenLength bool
	// BadPayloadReason answers a body that is not a JSON object with an "aps" object; Apple's
	// reason is unconfirmed, default PayloadEmpty (gateways.md §1.7).
	BadPayloadReason string
	// PerTokenPerSecond > 0 answers 429 TooManyRequests to requests for one device token
	// beyond that many within one clock second.
	PerTokenPerSecond int
	// Record keeps up to this many accepted notifications for Sent(); 0 keeps none.
	Record int
	// NoTokenStats turns off Stats.PerToken (for very large audiences).
	NoTokenStats bool
	// Now is the clock for token age and 410 timestamps; default time.Now.
	Now func() time.Time

	Knobs
}

// Validate reports a config the simulator cannot honour.
func (c *APNsConfig) Validate() error {
	if c.ErrorRate < 0 || c.ErrorRate > 1 || c.InvalidTokenRate < 0 || c.InvalidTokenRate > 1 {
		return errors.New("invalid APNs simulator config: rates must be within [0, 1]")
	}
	if c.Latency < 0 || c.Jitter < 0 || c.RatePerSecond < 0 || c.MaxConcurrentStreams < 0 || c.Record < 0 {
		return errors.New("invalid APNs simulator config: durations, rates and counts must not be negative")
	}
	for kid, k := range c.Keys {
		if k.Public == nil || k.TeamID == "" {
			return fmt.Errorf("invalid APNs simulator config: key %s needs TeamID and Public", kid)
		}
	}
	for _, cc := range c.ClientCerts {
		if cc.Cert == nil || len(cc.Topics) == 0 {
			return errors.New("invalid APNs simulator config: a client certificate needs Cert and Topics")
		}
	}
	return nil
}

// APNs is a running APNs provider-API simulator. Requests go to URL()+"/3/device/<token>";
// add a client certificate (NewClientCert) to ClientTLS for certificate auth; Sent holds the
// notifications APNsConfig.Record keeps.
type APNs struct {
	cfg      APNsConfig
	env      string
	now      func() time.Time
	endpoint // srv and rec: URL, ClientTLS, CertPEM, Close, Stats, Sent
	auth     *apnsAuth
	faults   *faults
	topics   map[string]map[string]bool // team → allowed bundle ids (immutable after start)

	tokMu  sync.RWMutex
	tokens map[string]tokenState // explicit token registry, guarded by tokMu

	rateMu sync.Mutex
	rate   map[string]tokenWindow // per-token request counts, guarded by rateMu
}

type tokenKind uint8

const (
	tokenUnregistered tokenKind = iota + 1
	tokenExpired
	tokenBad
	tokenTopic // valid for one topic only
)

type tokenState struct {
	kind  tokenKind
	ts    int64 // Unregistered: ms
	topic string
}

type tokenWindow struct {
	sec int64
	n   int
}

// NewAPNs starts an APNs simulator.
func NewAPNs(cfg APNsConfig) (*APNs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxConcurrentStreams == 0 {
		cfg.MaxConcurrentStreams = 1000
	}
	if cfg.BadPayloadReason == "" {
		cfg.BadPayloadReason = reasonPayloadEmpty
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &APNs{
		cfg:      cfg,
		env:      "production",
		now:      cfg.Now,
		auth:     newAPNsAuth(),
		faults:   newFaults(cfg.Knobs),
		endpoint: endpoint{rec: newRecorder(cfg.NoTokenStats, cfg.Record, &outage{now: cfg.Now})},
		topics:   make(map[string]map[string]bool),
		tokens:   make(map[string]tokenState),
		rate:     make(map[string]tokenWindow),
	}
	if cfg.Sandbox {
		s.env = "sandbox"
	}
	for kid, k := range cfg.Keys {
		s.auth.addKey(kid, k)
	}
	for _, c := range cfg.ClientCerts {
		s.auth.addCert(c)
	}
	for team, ts := range cfg.Topics {
		m := make(map[string]bool, len(ts))
		for _, t := range ts {
			m[t] = true
		}
		s.topics[team] = m
	}
	srv, err := startServer(serverOptions{
		addr:        cfg.Addr,
		handler:     s,
		maxStreams:  cfg.MaxConcurrentStreams,
		clientCerts: true,
		connContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, apnsConnKey{}, &apnsConn{})
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cannot start APNs simulator: %w", err)
	}
	s.srv = srv
	return s, nil
}

// Reset zeroes the counters and recorded notifications; keys, tokens and faults stay.
func (s *APNs) Reset() {
	s.rec.reset()
	s.rateMu.Lock()
	clear(s.rate)
	s.rateMu.Unlock()
}

// AddKey trusts a signing key for token auth (both environments).
func (s *APNs) AddKey(keyID, teamID string, pub *ecdsa.PublicKey) {
	s.auth.addKey(keyID, APNsKey{TeamID: teamID, Public: pub})
}

// NewKey generates a .p8 key, trusts it for teamID and returns the PEM.
func (s *APNs) NewKey(keyID, teamID string) ([]byte, error) {
	p8, err := NewAPNsKey(keyID, teamID)
	if err != nil {
		return nil, err
	}
	pub, err := APNsPublicKey(p8)
	if err != nil {
		return nil, err
	}
	s.AddKey(keyID, teamID, pub)
	return p8, nil
}

// AddClientCert trusts a client certificate for topics (the first is its default topic),
// in both environments.
func (s *APNs) AddClientCert(cert *x509.Certificate, topics ...string) {
	s.auth.addCert(APNsClientCert{Cert: cert, Topics: topics})
}

// MarkUnregistered makes token answer 410 Unregistered with timestamp = now.
func (s *APNs) MarkUnregistered(token string) {
	s.setToken(token, tokenState{kind: tokenUnregistered, ts: s.now().UnixMilli()})
}

// MarkExpiredToken makes token answer 410 ExpiredToken.
func (s *APNs) MarkExpiredToken(token string) { s.setToken(token, tokenState{kind: tokenExpired}) }

// MarkBadToken makes token answer 400 BadDeviceToken (as a token of the other environment does).
func (s *APNs) MarkBadToken(token string) { s.setToken(token, tokenState{kind: tokenBad}) }

// SetTokenTopic makes token valid only for topic; others get 400 DeviceTokenNotForTopic.
func (s *APNs) SetTokenTopic(token, topic string) {
	s.setToken(token, tokenState{kind: tokenTopic, topic: topic})
}

// ClearToken forgets any state set for token.
func (s *APNs) ClearToken(token string) {
	s.tokMu.Lock()
	delete(s.tokens, token)
	s.tokMu.Unlock()
}

func (s *APNs) setToken(token string, st tokenState) {
	s.tokMu.Lock()
	s.tokens[token] = st
	s.tokMu.Unlock()
}

// Inject scripts the answer to the next n send requests, e.g. Inject(3, Fault{Status: 503})
// or Inject(10, Fault{Status: 429, Reason: "TooManyRequests", RetryAfter: time.Second}).
func (s *APNs) Inject(n int, f Fault) { s.faults.inject(n, f) }

// PendingFaults is how many scripted answers are not yet used.
func (s *APNs) PendingFaults() int { return s.faults.pending() }

// StartOutage makes every send request, from now on, get the answer of each phase in turn
// (for its duration), replacing any outage in force; see Outage.
func (s *APNs) StartOutage(phases ...Outage) error { return s.rec.outage.begin(phases) }

// EndOutage ends the outage in force, if any.
func (s *APNs) EndOutage() { s.rec.outage.end() }

const apnsPathPrefix = "/3/device/"

func (s *APNs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_") && s.rec.serveControl(w, r, s.Reset, s.faults) {
		return
	}
	h := r.Header
	id := headerValue(h, "Apns-Id")
	if !strings.HasPrefix(r.URL.Path, apnsPathPrefix) {
		s.fail(w, id, reasonBadPath, 0)
		return
	}
	if r.Method != http.MethodPost {
		s.fail(w, id, reasonMethodNotAllowed, 0)
		return
	}
	answer := func(f Fault) { s.fault(w, id, f) }
	if s.intercept(w, r, s.faults, s.now(), Fault{Status: http.StatusServiceUnavailable, Reason: reasonShutdown}, answer, answer) {
		return
	}
	token := r.URL.Path[len(apnsPathPrefix):]
	topic, reason := s.check(r, h, token, id)
	if reason != "" {
		s.fail(w, id, reason, 0)
		return
	}
	// Headers are valid; the body and the token's state decide the rest.
	pushType := headerValue(h, "Apns-Push-Type")
	limit := apnsMaxPayload
	if pushType == "voip" {
		limit = apnsMaxVoIPPayload
	}
	buf := getBuf()
	defer putBuf(buf)
	body, tooLarge, err := readBody(r.Body, buf, limit)
	if err != nil {
		return // client went away
	}
	switch {
	case tooLarge:
		s.fail(w, id, reasonPayloadTooLarge, 0)
		return
	case len(body) == 0:
		s.fail(w, id, reasonPayloadEmpty, 0)
		return
	case !validAPSPayload(body):
		s.fail(w, id, s.cfg.BadPayloadReason, 0)
		return
	}
	if reason, ts := s.tokenAnswer(token, topic); reason != "" {
		s.fail(w, id, reason, ts)
		return
	}
	if s.cfg.PerTokenPerSecond > 0 && !s.allowToken(token) {
		s.fail(w, id, reasonTooManyRequests, 0)
		return
	}
	if id == "" {
		id = newUUID()
	}
	wh := w.Header()
	wh["Apns-Id"] = []string{id}
	if s.cfg.Sandbox {
		wh["Apns-Unique-Id"] = []string{newUUID()}
	}
	w.WriteHeader(http.StatusOK)
	s.rec.accepted(token, false, func() Sent {
		hs := make(map[string]string)
		for k, v := range h {
			if lk := strings.ToLower(k); strings.HasPrefix(lk, "apns-") && len(v) > 0 {
				hs[lk] = v[0]
			}
		}
		return Sent{Target: token, Headers: hs, Body: append(json.RawMessage(nil), body...), NotifyID: hs["apns-collapse-id"], Peer: r.RemoteAddr}
	})
}

// check validates everything but the body: duplicates, auth, device token and headers. It
// returns the effective topic (a certificate's default when the header is absent) and the
// reason to reject with, or "".
func (s *APNs) check(r *http.Request, h http.Header, token, id string) (topic, reason string) {
	topic = headerValue(h, "Apns-Topic")
	reason = s.checkHeaders(r, h, token, id, &topic)
	return topic, reason
}

func (s *APNs) checkHeaders(r *http.Request, h http.Header, token, id string, topicp *string) string {
	for _, k := range [...]string{"Authorization", "Apns-Id", "Apns-Topic", "Apns-Push-Type",
		"Apns-Priority", "Apns-Expiration", "Apns-Collapse-Id"} {
		if len(h[k]) > 1 {
			return reasonDuplicateHeaders
		}
	}
	pushType := headerValue(h, "Apns-Push-Type")
	if reason := s.checkAuth(r, h, topicp); reason != "" {
		return reason
	}
	topic := *topicp
	if token == "" {
		return reasonMissingDeviceToken
	}
	if !s.validToken(token) {
		return reasonBadDeviceToken
	}
	if id != "" && !validUUID(id) {
		return reasonBadMessageID
	}
	suffix, known := "", true
	if pushType != "" {
		suffix, known = pushTypeSuffix[pushType]
		if !known {
			return reasonInvalidPushType
		}
	}
	if suffix != "" && !strings.HasSuffix(topic, suffix) {
		return reasonBadTopic
	}
	if p, ok := h["Apns-Priority"]; ok {
		switch p[0] {
		case "1", "5":
		case "10":
			if pushType == "background" {
				return reasonBadPriority // background pushes must not be sent with priority 10
			}
		default:
			return reasonBadPriority
		}
	}
	if e, ok := h["Apns-Expiration"]; ok {
		if n, err := strconv.ParseInt(e[0], 10, 64); err != nil || n < 0 {
			return reasonBadExpirationDate
		}
	}
	if c := headerValue(h, "Apns-Collapse-Id"); len(c) > apnsMaxCollapseID {
		return reasonBadCollapseID
	}
	return ""
}

// checkAuth applies token or certificate auth and the topic rules tied to the credential.
// For certificate auth an absent topic becomes the certificate's default topic.
func (s *APNs) checkAuth(r *http.Request, h http.Header, topic *string) string {
	authz := headerValue(h, "Authorization")
	if authz == "" {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return reasonMissingProviderToken
		}
		c := s.auth.cert(r.TLS.PeerCertificates[0].Raw)
		if c == nil {
			return reasonBadCertificate
		}
		if c.Env != "" && c.Env != s.env {
			return reasonBadCertificateEnvironment
		}
		if *topic == "" {
			if len(c.Topics) > 1 {
				return reasonMissingTopic
			}
			*topic = c.Topics[0]
		}
		for _, t := range c.Topics {
			if baseTopic(*topic) == t {
				return ""
			}
		}
		return reasonTopicDisallowed
	}
	tok, ok := cutPrefixFold(authz, "bearer ")
	if !ok || tok == "" {
		return reasonInvalidProviderToken
	}
	info, fresh := s.auth.verify(tok)
	if !info.ok {
		return reasonInvalidProviderToken
	}
	if fresh {
		s.rec.authToken()
	}
	now := s.now().Unix()
	if info.iat > now+jwtFutureSkew {
		return reasonInvalidProviderToken
	}
	if now-info.iat > jwtMaxAge {
		return reasonExpiredProviderToken
	}
	if info.env != "" && info.env != s.env {
		return reasonBadEnvironmentKeyInToken
	}
	if c, _ := r.Context().Value(apnsConnKey{}).(*apnsConn); c != nil {
		if reason := c.admit(tok, info); reason != "" {
			return reason
		}
	}
	if *topic == "" {
		return reasonMissingTopic
	}
	if allowed, listed := s.topics[info.team]; listed && !allowed[baseTopic(*topic)] {
		return reasonTopicDisallowed
	}
	return ""
}

// baseTopic strips a push-type suffix (".voip", ".complication", ...) from a topic.
func baseTopic(t string) string {
	for _, suf := range pushTypeSuffix {
		if suf != "" && strings.HasSuffix(t, suf) {
			return t[:len(t)-len(suf)]
		}
	}
	return t
}

// tokenAnswer returns the registry's answer for a token: reason (or "") and a 410 timestamp.
func (s *APNs) tokenAnswer(token, topic string) (string, int64) {
	s.tokMu.RLock()
	st, ok := s.tokens[token]
	s.tokMu.RUnlock()
	if ok {
		switch st.kind {
		case tokenUnregistered:
			return reasonUnregistered, st.ts
		case tokenExpired:
			return reasonExpiredToken, 0
		case tokenBad:
			return reasonBadDeviceToken, 0
		case tokenTopic:
			if topic != "" && baseTopic(topic) != st.topic {
				return reasonDeviceTokenNotForTopic, 0
			}
		}
		return "", 0
	}
	if IsDeadToken(token, s.cfg.InvalidTokenRate, s.cfg.Seed) {
		// Dead as of this reply: a load test registers its devices after the simulator
		// starts, and a 410 older than a device's registration means it registered again.
		return reasonUnregistered, s.now().UnixMilli()
	}
	return "", 0
}

func (s *APNs) allowToken(token string) bool {
	sec := s.now().Unix()
	s.rateMu.Lock()
	defer s.rateMu.Unlock()
	w := s.rate[token]
	if w.sec != sec {
		w = tokenWindow{sec: sec}
	}
	w.n++
	s.rate[token] = w
	return w.n <= s.cfg.PerTokenPerSecond
}

func (s *APNs) validToken(t string) bool {
	if s.cfg.AnyTokenLength {
		if len(t) < 16 || len(t) > 200 || len(t)%2 != 0 {
			return false
		}
	} else if len(t) != 64 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if !isHex(t[i]) {
			return false
		}
	}
	return true
}

func (s *APNs) fault(w http.ResponseWriter, id string, f Fault) {
	reason := f.Reason
	if reason == "" {
		switch f.Status {
		case 500:
			reason = reasonInternalServerError
		case 429:
			reason = reasonTooManyRequests
		default:
			reason = reasonServiceUnavailable
		}
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	status := f.Status
	if status == 0 {
		status = apnsStatus[reason]
	}
	s.write(w, id, status, reason, 0)
}

func (s *APNs) fail(w http.ResponseWriter, id, reason string, ts int64) {
	status, ok := apnsStatus[reason]
	if !ok {
		status = http.StatusBadRequest
	}
	s.write(w, id, status, reason, ts)
}

func (s *APNs) write(w http.ResponseWriter, id string, status int, reason string, ts int64) {
	if id == "" || !validUUID(id) {
		id = newUUID()
	}
	wh := w.Header()
	wh["Apns-Id"] = []string{id}
	wh["Content-Type"] = []string{"application/json; charset=utf-8"}
	w.WriteHeader(status)
	var b []byte
	if ts > 0 {
		b = fmt.Appendf(nil, `{"reason":%q,"timestamp":%d}`, reason, ts)
	} else {
		b = fmt.Appendf(nil, `{"reason":%q}`, reason)
	}
	_, _ = w.Write(b)
	s.rec.answer(status, reason)
}

// validAPSPayload reports whether body is a JSON object whose "aps" member is an object. It
// scans instead of decoding: this runs on every request and encoding/json was most of the
// simulator's own CPU. Keys written with escapes are compared verbatim.
func validAPSPayload(body []byte) bool {
	if !json.Valid(body) {
		return false
	}
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i++
	for {
		i = skipWS(body, i)
		if body[i] == '}' {
			return false
		}
		if body[i] == ',' {
			i = skipWS(body, i+1)
		}
		end := skipString(body, i)
		key := body[i+1 : end-1]
		i = skipWS(body, end)
		i = skipWS(body, i+1) // past ':'
		if string(key) == "aps" {
			return body[i] == '{'
		}
		i = skipValue(body, i)
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"' (b is valid JSON).
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index after the value starting at b[i] (b is valid JSON).
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			i = skipString(b, i)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// headerValue returns the single value of a canonical header key, without allocating.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validUUID accepts the 8-4-4-4-12 hex form (either case).
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHex(s[i]) {
				return false
			}
		}
	}
	return true
}

// newUUID makes a random version-4 UUID in canonical lower-case form.
func newUUID() string {
	var b [16]byte
	hi, lo := rand.Uint64(), rand.Uint64()
	for i := 0; i < 8; i++ {
		b[i] = byte(hi >> (8 * i))
		b[8+i] = byte(lo >> (8 * i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// bufPool holds request-body buffers big enough for the largest accepted payload plus one
// byte (to detect "too large" without reading the rest).
var bufPool = sync.Pool{New: func() any { b := make([]byte, 8193); return &b }}

func getBuf() *[]byte  { return bufPool.Get().(*[]byte) }
func putBuf(b *[]byte) { bufPool.Put(b) }

// readBody reads up to limit bytes into buf; tooLarge reports a longer body.
func readBody(r io.Reader, buf *[]byte, limit int) (body []byte, tooLarge bool, err error) {
	b := (*buf)[:limit+1]
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	if n > limit {
		return nil, true, nil
	}
	return b[:n], false, nil
}
