package sim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HMS Push Kit result codes (gateways.md §3.3). The code field is a string.
const (
	HMSSuccess          = "80000000"
	HMSPartial          = "80100000"
	HMSParamError       = "80100001"
	HMSBadStructure     = "80100003"
	HMSBadTTL           = "80100004"
	HMSBadCollapseKey   = "80100013"
	HMSTopicBusy        = "80100017"
	HMSAuthError        = "80200001"
	HMSTokenExpired     = "80200003"
	HMSNoPermission     = "80300002"
	HMSAllInvalid       = "80300007"
	HMSTooLarge         = "80300008"
	HMSTokenCount       = "80300010"
	HMSNoHighPriority   = "80300011"
	HMSOAuthFailed      = "80600003"
	HMSInternal         = "81000001"
	hmsMaxTokens        = 1000
	hmsMaxBody          = 4096 // bytes, tokens excluded
	hmsMaxTTL           = 15 * 24 * 3600
	hmsMaxRequestLength = 2 << 20
)

// hmsStatus is the HTTP status of each code: 200 for accepted requests (and "all tokens
// invalid"), 400 parameter errors, 401 auth errors, 500 internal (gateways.md §3.3, v3 table,
// assumed for v1).
func hmsStatus(code string) int {
	switch {
	case code == HMSSuccess, code == HMSPartial, code == HMSAllInvalid:
		return http.StatusOK
	case code == HMSAuthError, code == HMSTokenExpired:
		return http.StatusUnauthorized
	case code == HMSInternal:
		return http.StatusInternalServerError
	case code == HMSNoPermission:
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

var hmsTTL = regexp.MustCompile(`^\d+(\.\d{1,9})?s$`)

// hmsCategories are the values of android.category: MARKETING (news and marketing) and the
// service and communication categories of Huawei's self-classification [unconfirmed: secondary
// sources; gateways.md §8a names the classes, not the values].
var hmsCategories = map[string]bool{"MARKETING": true, "IM": true, "VOIP": true, "SUBSCRIPTION": true,
	"TRAVEL": true, "HEALTH": true, "WORK": true, "ACCOUNT": true, "EXPRESS": true, "FINANCE": true,
	"DEVICE_REMINDER": true, "SYSTEM_REMINDER": true, "MAIL": true, "PLAY_VOICE": true}

// HMSConfig configures an HMS Push Kit simulator (server API v1 and its OAuth2 endpoint).
type HMSConfig struct {
	Addr string // listen address; default 127.0.0.1:0
	// Apps are the app ids the token endpoint knows, with their secrets (AddApp adds more).
	Apps map[string]string
	// AccessTokenTTL is the expires_in of issued tokens; default 1 h. Shorten it to exercise a
	// sender's refresh.
	AccessTokenTTL time.Duration
	// TokensPerSecond > 0 caps the targets per second per app; a request beyond it answers
	// HTTP 503 (traffic control) with Retry-After 1.
	TokensPerSecond float64
	// HighPriorityApps may send urgency HIGH; others get 80300011.
	HighPriorityApps []string
	Record           int  // keep up to this many accepted requests for Sent()
	NoTokenStats     bool // turn off Stats.PerToken
	Now              func() time.Time

	Knobs
}

// HMS is a running HMS Push Kit simulator. Sends go to URL()+"/v1/<appId>/messages:send".
type HMS struct {
	cfg      HMSConfig
	now      func() time.Time
	endpoint // srv and rec: URL, ClientTLS, CertPEM, Close, Stats, Sent
	faults   *faults
	seq      atomic.Uint64

	mu      sync.Mutex
	apps    map[string]string       // app id → secret
	tokens  map[string]hmsGrant     // access token → grant
	invalid map[string]bool         // device tokens that are invalid
	rates   map[string]*tokenBucket // per app
	high    map[string]bool         // apps allowed urgency HIGH
}

type hmsGrant struct {
	app     string
	expires time.Time
}

// NewHMS starts an HMS simulator serving HTTP/2 and HTTP/1.1 over TLS.
func NewHMS(cfg HMSConfig) (*HMS, error) {
	if cfg.ErrorRate < 0 || cfg.ErrorRate > 1 || cfg.InvalidTokenRate < 0 || cfg.InvalidTokenRate > 1 ||
		cfg.AccessTokenTTL < 0 || cfg.TokensPerSecond < 0 || cfg.Record < 0 {
		return nil, errors.New("invalid HMS simulator config: rates within [0, 1], nothing negative")
	}
	if cfg.AccessTokenTTL == 0 {
		cfg.AccessTokenTTL = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &HMS{
		cfg: cfg, now: cfg.Now,
		faults:   newFaults(cfg.Knobs),
		endpoint: endpoint{rec: newRecorder(cfg.NoTokenStats, cfg.Record, &outage{now: cfg.Now})},
		apps:     map[string]string{},
		tokens:   map[string]hmsGrant{},
		invalid:  map[string]bool{},
		rates:    map[string]*tokenBucket{},
		high:     map[string]bool{},
	}
	for id, secret := range cfg.Apps {
		s.apps[id] = secret
	}
	for _, id := range cfg.HighPriorityApps {
		s.high[id] = true
	}
	srv, err := startServer(serverOptions{addr: cfg.Addr, handler: s, http1: true, maxStreams: 1000})
	if err != nil {
		return nil, fmt.Errorf("cannot start HMS simulator: %w", err)
	}
	s.srv = srv
	s.receipts = newReceiptPoster(s.rec)
	return s, nil
}

// TokenURL is the OAuth2 token endpoint.
func (s *HMS) TokenURL() string { return s.srv.url() + "/oauth2/v3/token" }

// Reset zeroes counters and recorded requests.
func (s *HMS) Reset() { s.rec.reset() }

// AddApp trusts appID with secret at the token endpoint.
func (s *HMS) AddApp(appID, secret string) {
	s.mu.Lock()
	s.apps[appID] = secret
	s.mu.Unlock()
}

// NewApp makes and trusts an app with a random secret.
func (s *HMS) NewApp(appID string) (secret string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	secret = hex.EncodeToString(b[:])
	s.AddApp(appID, secret)
	return secret
}

// ExpireAccessTokens makes every issued token expired (the next send gets 80200003).
func (s *HMS) ExpireAccessTokens() {
	s.mu.Lock()
	for k, g := range s.tokens {
		g.expires = time.Time{}
		s.tokens[k] = g
	}
	s.mu.Unlock()
}

// MarkInvalid makes a device token invalid (listed as illegal, or 80300007 when all are).
func (s *HMS) MarkInvalid(token string) {
	s.mu.Lock()
	s.invalid[token] = true
	s.mu.Unlock()
}

// Inject scripts the answer to the next n send requests: Fault.Reason is an HMS code (its
// HTTP status follows the code unless Status is set), or empty with Status 502/503 for a
// bare gateway error.
func (s *HMS) Inject(n int, f Fault) { s.faults.inject(n, f) }

type hmsReply struct {
	Code      string `json:"code"`
	Msg       string `json:"msg"`
	RequestID string `json:"requestId"`
}

func (s *HMS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/_") && (s.serveReceipt(w, r) || s.rec.serveControl(w, r, s.Reset, s.faults)) {
		return
	}
	if path == "/oauth2/v3/token" || path == "/oauth2/v2/token" {
		s.serveToken(w, r)
		return
	}
	app, ok := strings.CutPrefix(path, "/v1/")
	if ok {
		app, ok = strings.CutSuffix(app, "/messages:send")
	}
	if !ok || app == "" || strings.Contains(app, "/") || r.Method != http.MethodPost {
		s.reply(w, http.StatusNotFound, "404", "wrong URL or method", 0)
		return
	}
	// In status mode a phase's Reason is an HMS code (e.g. 81000001); a bare status otherwise.
	answer := func(f Fault) { s.fault(w, f) }
	if s.intercept(w, r, s.faults, s.now(), Fault{Status: http.StatusServiceUnavailable}, answer, answer) {
		return
	}
	tok, ok := cutPrefixFold(headerValue(r.Header, "Authorization"), "Bearer ")
	if !ok || tok == "" {
		s.reply(w, 0, HMSAuthError, "missing access token", 0)
		return
	}
	s.mu.Lock()
	g, known := s.tokens[tok]
	s.mu.Unlock()
	switch {
	case !known || g.app != app:
		s.reply(w, 0, HMSAuthError, "oauth authentication error", 0)
		return
	case !s.now().Before(g.expires):
		s.reply(w, 0, HMSTokenExpired, "oauth token expired", 0)
		return
	}
	body, tooLarge, err := readSmall(r.Body, hmsMaxRequestLength)
	if err != nil {
		return
	}
	if tooLarge {
		s.reply(w, 0, HMSTooLarge, "message body size exceeds the default value", 0)
		return
	}
	var req struct {
		ValidateOnly bool `json:"validate_only"`
		Message      *struct {
			Token     []string        `json:"token"`
			Topic     string          `json:"topic"`
			Condition string          `json:"condition"`
			Data      json.RawMessage `json:"data"`
			Android   *struct {
				CollapseKey *int            `json:"collapse_key"`
				Urgency     string          `json:"urgency"`
				TTL         string          `json:"ttl"`
				Data        json.RawMessage `json:"data"`
				TargetUser  *int            `json:"target_user_type"`
				Category    string          `json:"category"`
				BiTag       string          `json:"bi_tag"`
				Notify      *struct {
					Title       string `json:"title"`
					Body        string `json:"body"`
					ClickAction *struct {
						Type int `json:"type"`
					} `json:"click_action"`
				} `json:"notification"`
			} `json:"android"`
		} `json:"message"`
	}
	if json.Unmarshal(body, &req) != nil || req.Message == nil {
		s.reply(w, 0, HMSBadStructure, "incorrect message structure", 0)
		return
	}
	m := req.Message
	targets := 0
	for _, set := range []bool{len(m.Token) > 0, m.Topic != "", m.Condition != ""} {
		if set {
			targets++
		}
	}
	if targets != 1 {
		if len(m.Token) == 0 && m.Token != nil {
			s.reply(w, 0, HMSTokenCount, "the number of tokens is out of range", 0)
			return
		}
		s.reply(w, 0, HMSParamError, "exactly one of token, topic and condition is required", 0)
		return
	}
	if len(m.Token) > hmsMaxTokens {
		s.reply(w, 0, HMSTokenCount, "the number of tokens is out of range", 0)
		return
	}
	tokBytes := 0
	for _, t := range m.Token {
		tokBytes += len(t) + 3
	}
	if len(body)-tokBytes > hmsMaxBody {
		s.reply(w, 0, HMSTooLarge, "message body size exceeds the default value", len(m.Token))
		return
	}
	if len(m.Data) > 0 && m.Data[0] != '"' {
		s.reply(w, 0, HMSParamError, "data must be a string", len(m.Token))
		return
	}
	if a := m.Android; a != nil {
		if a.TTL != "" {
			if !hmsTTL.MatchString(a.TTL) {
				s.reply(w, 0, HMSBadStructure, "ttl format error", len(m.Token))
				return
			}
			secs, _ := strconv.ParseFloat(strings.TrimSuffix(a.TTL, "s"), 64)
			if secs <= 0 || secs > hmsMaxTTL {
				s.reply(w, 0, HMSBadTTL, "ttl out of range", len(m.Token))
				return
			}
		}
		if a.Category != "" && !hmsCategories[a.Category] {
			s.reply(w, 0, HMSParamError, "category is invalid", len(m.Token))
			return
		}
		if a.CollapseKey != nil && (*a.CollapseKey < -1 || *a.CollapseKey > 100) {
			s.reply(w, 0, HMSBadCollapseKey, "collapse_key out of range", len(m.Token))
			return
		}
		switch a.Urgency {
		case "", "NORMAL":
		case "HIGH":
			s.mu.Lock()
			allowed := s.high[app]
			s.mu.Unlock()
			if !allowed {
				s.reply(w, 0, HMSNoHighPriority, "no permission to send high-priority messages", len(m.Token))
				return
			}
		default:
			s.reply(w, 0, HMSParamError, "urgency must be HIGH or NORMAL", len(m.Token))
			return
		}
		if a.TargetUser != nil && *a.TargetUser != 0 && *a.TargetUser != 1 {
			s.reply(w, 0, HMSParamError, "target_user_type must be 0 or 1", len(m.Token))
			return
		}
		if n := a.Notify; n != nil && (n.Title == "" || n.Body == "") {
			s.reply(w, 0, HMSParamError, "notification title and body are required", len(m.Token))
			return
		}
	}
	if s.cfg.TokensPerSecond > 0 {
		s.mu.Lock()
		b := s.rates[app]
		if b == nil {
			b = &tokenBucket{rate: s.cfg.TokensPerSecond}
			s.rates[app] = b
		}
		s.mu.Unlock()
		if !b.take(s.now(), max(len(m.Token), 1)) {
			w.Header().Set("Retry-After", "1")
			s.reply(w, http.StatusServiceUnavailable, "", "traffic control", len(m.Token))
			return
		}
	}
	var good, bad []string
	s.mu.Lock()
	for _, t := range m.Token {
		if !validVendorToken(t) || s.invalid[t] || IsDeadToken(t, s.cfg.InvalidTokenRate, s.cfg.Seed) {
			bad = append(bad, t)
		} else {
			good = append(good, t)
		}
	}
	s.mu.Unlock()
	switch {
	case len(m.Token) > 0 && len(good) == 0:
		s.reply(w, 0, HMSAllInvalid, "all the tokens are invalid", len(m.Token))
		return
	case req.ValidateOnly:
		s.rec.validateOnly()
		writeJSON(w, http.StatusOK, hmsReply{Code: HMSSuccess, Msg: "Success", RequestID: s.requestID()})
		return
	}
	code, msg := HMSSuccess, "Success"
	if len(bad) > 0 {
		code = HMSPartial
		b, _ := json.Marshal(struct {
			Success       int      `json:"success"`
			Failure       int      `json:"failure"`
			IllegalTokens []string `json:"illegal_tokens"`
		}{len(good), len(bad), bad})
		msg = string(b)
	}
	reqID := s.requestID()
	writeJSON(w, http.StatusOK, hmsReply{Code: code, Msg: msg, RequestID: reqID})
	if m.Android != nil && m.Topic == "" && m.Condition == "" {
		huaweiReceipt(s.receipts, s.receiptConfig(app), app, m.Android.BiTag, reqID, good, s.cfg.Knobs, s.now())
	}
	target := m.Topic
	if target == "" {
		target = m.Condition
	}
	if len(good) == 0 {
		good = []string{"topic:" + target}
	}
	s.rec.acceptedMany(good, code, func() Sent {
		return Sent{Target: strings.Join(good, ","), Project: app, Body: append(json.RawMessage(nil), body...), NotifyID: hmsNotifyID(body)}
	})
}

func (s *HMS) requestID() string {
	return strconv.FormatInt(s.now().UnixMilli(), 10) + fmt.Sprintf("%08d", s.seq.Add(1)%100000000)
}

// reply answers an error (or a bare status when code is ""): HTTP status from the code
// unless status is given. targets is only for the record of bare errors.
func (s *HMS) reply(w http.ResponseWriter, status int, code, msg string, _ int) {
	if status == 0 {
		status = hmsStatus(code)
	}
	reason := code
	if reason == "" {
		reason = strconv.Itoa(status)
	}
	if code == "" {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(msg))
	} else {
		writeJSON(w, status, hmsReply{Code: code, Msg: msg, RequestID: s.requestID()})
	}
	s.rec.answer(status, reason)
}

// StartOutage makes every send request get the answer of each phase in turn; see Outage.
// The token endpoint keeps working.
func (s *HMS) StartOutage(phases ...Outage) error { return s.rec.outage.begin(phases) }

// EndOutage ends the outage in force, if any.
func (s *HMS) EndOutage() { s.rec.outage.end() }

func (s *HMS) fault(w http.ResponseWriter, f Fault) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	code := f.Reason
	if code == "" && f.Status != 502 && f.Status != 503 {
		code = HMSInternal
	}
	s.reply(w, f.Status, code, "injected fault", 0)
}

// serveToken is the OAuth2 client-credentials endpoint. Wrong client id or secret answers
// HTTP 400 {"error":1101,"error_description":"invalid client"} (the exact status and body are
// unconfirmed, gateways.md §3.5).
func (s *HMS) serveToken(w http.ResponseWriter, r *http.Request) {
	id, ok := clientGrant(w, r, hmsRefusals, func(id string) (string, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		secret, ok := s.apps[id]
		return secret, ok
	})
	if !ok {
		return
	}
	tok := newAccessToken("CF")
	s.mu.Lock()
	s.tokens[tok] = hmsGrant{app: id, expires: s.now().Add(s.cfg.AccessTokenTTL)}
	s.mu.Unlock()
	s.rec.authToken()
	writeAccessToken(w, tok, s.cfg.AccessTokenTTL)
}

var hmsRefusals = oauthRefusals{
	request: map[string]any{"error": 1102, "error_description": "invalid request"},
	grant:   map[string]any{"error": 1102, "error_description": "unsupported grant_type"},
	client:  map[string]any{"error": 1101, "error_description": "invalid client"},
}
