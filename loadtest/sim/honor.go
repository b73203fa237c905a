package sim

import (
	"cmp"
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

// Honor Push result codes (docs/vendors.md, Honor). 200 success with data.failTokens and
// data.expireTokens is what public client code shows; the rest is HMS's table, which Honor's
// API copies (unconfirmed for Honor). HonorDefaultQuotaCode is this simulator's own code of a
// spent daily quota: Honor's is unconfirmed, so senders trust it only when told to.
const (
	HonorOK               = 200
	HonorParamError       = 80100001
	HonorBadStructure     = 80100003
	HonorBadTTL           = 80100004
	HonorAuthError        = 80200001
	HonorTokenExpired     = 80200003
	HonorNoPermission     = 80300002
	HonorAllInvalid       = 80300007
	HonorTooLarge         = 80300008
	HonorTokenCount       = 80300010
	HonorInternal         = 81000001
	HonorDefaultQuotaCode = 80300099
	honorMaxTokens        = 1000
	honorMaxBody          = 4096 // bytes, tokens excluded (HMS's limit, assumed)
	honorMaxTTL           = 15 * 24 * 3600
	honorMaxRequestLength = 2 << 20
)

// honorStatus is the HTTP status of each code: 200 for accepted requests, "all tokens invalid"
// and a spent quota, 401 auth errors, 403 no permission, 500 internal, 400 the rest (HMS's).
func honorStatus(code int) int {
	switch code {
	case HonorOK, HonorAllInvalid:
		return http.StatusOK
	case HonorAuthError, HonorTokenExpired:
		return http.StatusUnauthorized
	case HonorInternal:
		return http.StatusInternalServerError
	case HonorNoPermission:
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

var honorTTL = regexp.MustCompile(`^\d+(\.\d{1,9})?s$`)

// HonorConfig configures an Honor Push simulator (sendMessage and its OAuth2 token endpoint).
type HonorConfig struct {
	Addr string // listen address; default 127.0.0.1:0
	// AccessTokenTTL is the expires_in of issued tokens; default 1 h. Shorten it to exercise a
	// sender's refresh.
	AccessTokenTTL time.Duration
	// TokensPerSecond > 0 caps the targets per second per app; a request beyond it answers
	// HTTP 503 (traffic control) with Retry-After 1.
	TokensPerSecond float64
	// DayQuota > 0 caps the targets accepted per app per day (China time); beyond it the
	// answer is QuotaCode, HTTP 200.
	DayQuota  int64
	QuotaCode int // default HonorDefaultQuotaCode
	Record    int // keep up to this many accepted requests for Sent()
	// NoTokenStats turns off Stats.PerToken.
	NoTokenStats bool
	Now          func() time.Time

	Knobs
}

// Honor is a running Honor Push simulator. Sends go to URL()+"/api/v1/<appId>/sendMessage",
// tokens come from TokenURL().
type Honor struct {
	cfg      HonorConfig
	now      func() time.Time
	endpoint // srv and rec: URL, ClientTLS, CertPEM, Close, Stats, Sent
	faults   *faults
	seq      atomic.Uint64

	mu      sync.Mutex
	clients map[string]*honorApp    // client id → app
	tokens  map[string]honorGrant   // access token → grant
	invalid map[string]bool         // device tokens that are invalid (expireTokens)
	failing map[string]bool         // device tokens answered in failTokens
	rates   map[string]*tokenBucket // per app id
}

type honorApp struct {
	appID, secret string
	day           string // China date of used
	used          int64
}

type honorGrant struct {
	app     *honorApp
	expires time.Time
}

// NewHonor starts an Honor simulator serving HTTP/2 and HTTP/1.1 over TLS.
func NewHonor(cfg HonorConfig) (*Honor, error) {
	if cfg.ErrorRate < 0 || cfg.ErrorRate > 1 || cfg.InvalidTokenRate < 0 || cfg.InvalidTokenRate > 1 ||
		cfg.AccessTokenTTL < 0 || cfg.TokensPerSecond < 0 || cfg.DayQuota < 0 || cfg.Record < 0 {
		return nil, errors.New("invalid Honor simulator config: rates within [0, 1], nothing negative")
	}
	if cfg.AccessTokenTTL == 0 {
		cfg.AccessTokenTTL = time.Hour
	}
	if cfg.QuotaCode == 0 {
		cfg.QuotaCode = HonorDefaultQuotaCode
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Honor{
		cfg: cfg, now: cfg.Now,
		faults:   newFaults(cfg.Knobs),
		endpoint: endpoint{rec: newRecorder(cfg.NoTokenStats, cfg.Record, &outage{now: cfg.Now})},
		clients:  map[string]*honorApp{},
		tokens:   map[string]honorGrant{},
		invalid:  map[string]bool{},
		failing:  map[string]bool{},
		rates:    map[string]*tokenBucket{},
	}
	srv, err := startServer(serverOptions{addr: cfg.Addr, handler: s, http1: true, maxStreams: 1000})
	if err != nil {
		return nil, fmt.Errorf("cannot start Honor simulator: %w", err)
	}
	s.srv = srv
	s.receipts = newReceiptPoster(s.rec)
	return s, nil
}

// TokenURL is the OAuth2 token endpoint.
func (s *Honor) TokenURL() string { return s.srv.url() + "/auth/token" }

// Reset zeroes counters, recorded requests and day quotas.
func (s *Honor) Reset() {
	s.rec.reset()
	s.mu.Lock()
	for _, a := range s.clients {
		a.used = 0
	}
	s.mu.Unlock()
}

// AddApp trusts clientID with secret at the token endpoint, for sends to appID.
func (s *Honor) AddApp(appID, clientID, secret string) {
	s.mu.Lock()
	s.clients[clientID] = &honorApp{appID: appID, secret: secret}
	s.mu.Unlock()
}

// NewApp makes and trusts a client of appID with a random id and secret.
func (s *Honor) NewApp(appID string) (clientID, secret string) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	clientID, secret = hex.EncodeToString(b[:8]), hex.EncodeToString(b[8:])
	s.AddApp(appID, clientID, secret)
	return clientID, secret
}

// ExpireAccessTokens makes every issued token expired (the next send gets 80200003).
func (s *Honor) ExpireAccessTokens() {
	s.mu.Lock()
	for k, g := range s.tokens {
		g.expires = time.Time{}
		s.tokens[k] = g
	}
	s.mu.Unlock()
}

// MarkInvalid makes a device token invalid: listed in expireTokens, or 80300007 when all are.
func (s *Honor) MarkInvalid(token string) {
	s.mu.Lock()
	s.invalid[token] = true
	s.mu.Unlock()
}

// MarkFailing makes a device token fail transiently (listed in failTokens) until cleared with
// MarkFailing(token, false).
func (s *Honor) MarkFailing(token string, failing bool) {
	s.mu.Lock()
	if failing {
		s.failing[token] = true
	} else {
		delete(s.failing, token)
	}
	s.mu.Unlock()
}

// Inject scripts the answer to the next n send requests: Fault.Reason is an Honor code (its
// HTTP status follows the code unless Status is set), or empty with a Status for a bare
// gateway error.
func (s *Honor) Inject(n int, f Fault) { s.faults.inject(n, f) }

// StartOutage makes every send request, from now on, get the answer of each phase in turn
// (for its duration), replacing any outage in force; see Outage. In status mode Reason is an
// Honor code; without one the bare HTTP status.
func (s *Honor) StartOutage(phases ...Outage) error { return s.rec.outage.begin(phases) }

// EndOutage ends the outage in force, if any.
func (s *Honor) EndOutage() { s.rec.outage.end() }

type honorReply struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    *honorSendData `json:"data,omitempty"`
}

type honorSendData struct {
	SendResult   bool     `json:"sendResult"`
	RequestID    string   `json:"requestId"`
	FailTokens   []string `json:"failTokens,omitempty"`
	ExpireTokens []string `json:"expireTokens,omitempty"`
}

type honorRequest struct {
	Token        []string        `json:"token"`
	Data         json.RawMessage `json:"data"`
	Notification *struct {
		Title string `json:"title"`
		Body  string `json:"body"`
	} `json:"notification"`
	Android *struct {
		TTL            string          `json:"ttl"`
		BiTag          string          `json:"biTag"`
		Data           json.RawMessage `json:"data"`
		TargetUserType *int            `json:"targetUserType"`
		Notification   *struct {
			Title       string `json:"title"`
			Body        string `json:"body"`
			Importance  string `json:"importance"`
			ClickAction *struct {
				Type   int    `json:"type"`
				Intent string `json:"intent"`
				URL    string `json:"url"`
				Action string `json:"action"`
			} `json:"clickAction"`
		} `json:"notification"`
	} `json:"android"`
}

func (s *Honor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.HasPrefix(path, "/_") && (s.serveReceipt(w, r) || s.rec.serveControl(w, r, s.Reset, s.faults)) {
		return
	}
	if path == "/auth/token" {
		s.serveToken(w, r)
		return
	}
	app, ok := strings.CutPrefix(path, "/api/v1/")
	if ok {
		app, ok = strings.CutSuffix(app, "/sendMessage")
	}
	if !ok || app == "" || strings.Contains(app, "/") || r.Method != http.MethodPost {
		s.bare(w, http.StatusNotFound, "wrong URL or method", 0)
		return
	}
	answer := func(f Fault) { s.fault(w, f) }
	if s.intercept(w, r, s.faults, s.now(), Fault{Status: http.StatusServiceUnavailable}, answer, answer) {
		return
	}
	tok, ok := cutPrefixFold(headerValue(r.Header, "Authorization"), "Bearer ")
	if !ok || tok == "" {
		s.reply(w, HonorAuthError, "missing access token")
		return
	}
	s.mu.Lock()
	g, known := s.tokens[tok]
	s.mu.Unlock()
	switch {
	case !known || g.app.appID != app:
		s.reply(w, HonorAuthError, "oauth authentication error")
		return
	case !s.now().Before(g.expires):
		s.reply(w, HonorTokenExpired, "oauth token expired")
		return
	}
	if ts := headerValue(r.Header, "Timestamp"); ts != "" {
		if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
			s.reply(w, HonorParamError, "timestamp header must be milliseconds since the epoch")
			return
		}
	}
	body, tooLarge, err := readSmall(r.Body, honorMaxRequestLength)
	if err != nil {
		return
	}
	if tooLarge {
		s.reply(w, HonorTooLarge, "message body size exceeds the default value")
		return
	}
	var m honorRequest
	if json.Unmarshal(body, &m) != nil {
		s.reply(w, HonorBadStructure, "incorrect message structure")
		return
	}
	if code, msg := s.validate(&m, len(body)); code != 0 {
		s.reply(w, code, msg)
		return
	}
	if s.cfg.TokensPerSecond > 0 {
		s.mu.Lock()
		b := s.rates[app]
		if b == nil {
			b = &tokenBucket{rate: s.cfg.TokensPerSecond}
			s.rates[app] = b
		}
		s.mu.Unlock()
		if !b.take(s.now(), len(m.Token)) {
			w.Header().Set("Retry-After", "1")
			s.bare(w, http.StatusServiceUnavailable, "traffic control", len(m.Token))
			return
		}
	}
	var good, expired, failed []string
	s.mu.Lock()
	for _, t := range m.Token {
		switch {
		case !validVendorToken(t) || s.invalid[t] || IsDeadToken(t, s.cfg.InvalidTokenRate, s.cfg.Seed):
			expired = append(expired, t)
		case s.failing[t]:
			failed = append(failed, t)
		default:
			good = append(good, t)
		}
	}
	test := m.Android != nil && m.Android.TargetUserType != nil && *m.Android.TargetUserType == 1
	quota := false
	if s.cfg.DayQuota > 0 && !test && len(good) > 0 {
		a := g.app
		if day := s.now().In(chinaTime).Format(time.DateOnly); a.day != day {
			a.day, a.used = day, 0
		}
		if a.used+int64(len(good)) > s.cfg.DayQuota {
			quota = true
		} else {
			a.used += int64(len(good))
		}
	}
	s.mu.Unlock()
	switch {
	case quota:
		s.reply(w, s.cfg.QuotaCode, "the daily quota of the app is exceeded")
		return
	case len(good) == 0 && len(failed) == 0:
		s.reply(w, HonorAllInvalid, "all the tokens are invalid")
		return
	}
	reqID := s.requestID()
	rep := honorReply{Code: HonorOK, Message: "success", Data: &honorSendData{
		SendResult: len(good) > 0, RequestID: reqID, FailTokens: failed, ExpireTokens: expired,
	}}
	writeJSON(w, http.StatusOK, rep)
	if m.Android != nil { // receipts as HMS sends them [unconfirmed for Honor]
		huaweiReceipt(s.receipts, s.receiptConfig(app), app, m.Android.BiTag, reqID, good, s.cfg.Knobs, s.now())
	}
	reason := "200"
	if len(expired)+len(failed) > 0 {
		reason = "200 partial"
	}
	if len(good) == 0 {
		s.rec.answer(http.StatusOK, reason)
		return
	}
	s.rec.acceptedMany(good, reason, func() Sent {
		return Sent{Target: strings.Join(good, ","), Project: app, Body: append(json.RawMessage(nil), body...), NotifyID: honorNotifyID(body)}
	})
}

// validate checks a send request as Honor (HMS's rules, assumed) would: 1–1000 tokens, at
// most 4096 bytes without them, data a string, ttl "<seconds>s" within 15 days,
// targetUserType 0/1, a notification with title and body, clickAction type 1 (intent or
// action), 2 (url) or 3 (the app), importance NORMAL or LOW. It returns the code and message
// of the first violation, or 0.
func (s *Honor) validate(m *honorRequest, bodyLen int) (int, string) {
	if len(m.Token) == 0 || len(m.Token) > honorMaxTokens {
		return HonorTokenCount, "the number of tokens is out of range"
	}
	tokBytes := 0
	for _, t := range m.Token {
		tokBytes += len(t) + 3
	}
	if bodyLen-tokBytes > honorMaxBody {
		return HonorTooLarge, "message body size exceeds the default value"
	}
	if len(m.Data) > 0 && m.Data[0] != '"' {
		return HonorParamError, "data must be a string"
	}
	a := m.Android
	if a == nil {
		if m.Notification == nil && len(m.Data) == 0 {
			return HonorBadStructure, "a message needs data, notification or android"
		}
		return 0, ""
	}
	if len(a.Data) > 0 && a.Data[0] != '"' {
		return HonorParamError, "android.data must be a string"
	}
	if a.TTL != "" {
		if !honorTTL.MatchString(a.TTL) {
			return HonorBadStructure, "ttl format error"
		}
		secs, _ := strconv.ParseFloat(strings.TrimSuffix(a.TTL, "s"), 64)
		if secs <= 0 || secs > honorMaxTTL {
			return HonorBadTTL, "ttl out of range"
		}
	}
	if a.TargetUserType != nil && *a.TargetUserType != 0 && *a.TargetUserType != 1 {
		return HonorParamError, "targetUserType must be 0 or 1"
	}
	n := a.Notification
	if n == nil {
		if len(m.Data) == 0 && len(a.Data) == 0 && m.Notification == nil {
			return HonorBadStructure, "a message needs data or a notification"
		}
		return 0, ""
	}
	// android.notification's title and body override notification's; one of each is needed.
	title, body := n.Title, n.Body
	if m.Notification != nil {
		title, body = cmp.Or(title, m.Notification.Title), cmp.Or(body, m.Notification.Body)
	}
	if title == "" || body == "" {
		return HonorParamError, "notification title and body are required"
	}
	switch n.Importance {
	case "", "NORMAL", "LOW":
	default:
		return HonorParamError, "importance must be NORMAL or LOW"
	}
	if c := n.ClickAction; c != nil {
		switch {
		case c.Type == 1 && c.Intent == "" && c.Action == "":
			return HonorParamError, "clickAction type 1 needs an intent or an action"
		case c.Type == 2 && c.URL == "":
			return HonorParamError, "clickAction type 2 needs a url"
		case c.Type < 1 || c.Type > 3:
			return HonorParamError, "clickAction type must be 1, 2 or 3"
		}
	} else {
		return HonorParamError, "notification clickAction is required"
	}
	return 0, ""
}

func (s *Honor) requestID() string {
	return strconv.FormatInt(s.now().UnixMilli(), 10) + fmt.Sprintf("%08d", s.seq.Add(1)%100000000)
}

// reply answers a result code with its HTTP status (200 for the quota code).
func (s *Honor) reply(w http.ResponseWriter, code int, msg string) {
	status := honorStatus(code)
	if code == s.cfg.QuotaCode {
		status = http.StatusOK
	}
	s.replyStatus(w, status, code, msg)
}

func (s *Honor) replyStatus(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, honorReply{Code: code, Message: msg})
	s.rec.answer(status, strconv.Itoa(code))
}

// bare answers an HTTP status without a result code (traffic control, gateway errors).
func (s *Honor) bare(w http.ResponseWriter, status int, msg string, _ int) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg))
	s.rec.answer(status, strconv.Itoa(status))
}

func (s *Honor) fault(w http.ResponseWriter, f Fault) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	code, err := strconv.Atoi(f.Reason)
	switch {
	case err == nil && f.Status != 0:
		s.replyStatus(w, f.Status, code, "injected fault")
	case err == nil:
		s.reply(w, code, "injected fault")
	case f.Status == 0 || f.Status == 500:
		s.reply(w, HonorInternal, "injected fault")
	default:
		s.bare(w, f.Status, "injected fault", 0)
	}
}

// serveToken is the OAuth2 client-credentials endpoint (form grant_type, client_id,
// client_secret). A wrong client answers HTTP 400 {"error":"invalid_client"} (Honor's exact
// error body is unconfirmed).
func (s *Honor) serveToken(w http.ResponseWriter, r *http.Request) {
	var a *honorApp
	_, ok := clientGrant(w, r, honorRefusals, func(id string) (string, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		var known bool
		if a, known = s.clients[id]; !known {
			return "", false
		}
		return a.secret, true
	})
	if !ok {
		return
	}
	tok := newAccessToken("HN")
	s.mu.Lock()
	s.tokens[tok] = honorGrant{app: a, expires: s.now().Add(s.cfg.AccessTokenTTL)}
	s.mu.Unlock()
	s.rec.authToken()
	writeAccessToken(w, tok, s.cfg.AccessTokenTTL)
}

var honorRefusals = oauthRefusals{
	request: map[string]any{"error": "invalid_request", "error_description": "POST a form"},
	grant:   map[string]any{"error": "unsupported_grant_type", "error_description": "grant_type must be client_credentials"},
	client:  map[string]any{"error": "invalid_client", "error_description": "invalid client"},
}
