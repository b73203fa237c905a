package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FCM error codes (details[].errorCode) and their canonical status and HTTP code (§2.3).
const (
	fcmInvalidArgument  = "INVALID_ARGUMENT"
	fcmUnregistered     = "UNREGISTERED"
	fcmSenderIDMismatch = "SENDER_ID_MISMATCH"
	fcmQuotaExceeded    = "QUOTA_EXCEEDED"
	fcmUnavailable      = "UNAVAILABLE"
	fcmInternal         = "INTERNAL"
	fcmThirdPartyAuth   = "THIRD_PARTY_AUTH_ERROR"
	fcmUnspecified      = "UNSPECIFIED_ERROR"
)

var fcmCodes = map[string]struct {
	status  string
	http    int
	message string
}{
	fcmInvalidArgument:  {"INVALID_ARGUMENT", 400, "Request contains an invalid argument."},
	fcmUnregistered:     {"NOT_FOUND", 404, "Requested entity was not found."},
	fcmSenderIDMismatch: {"PERMISSION_DENIED", 403, "SenderId mismatch"},
	fcmQuotaExceeded:    {"RESOURCE_EXHAUSTED", 429, "Quota exceeded for quota metric 'Send requests' of service 'fcm.googleapis.com'."},
	fcmUnavailable:      {"UNAVAILABLE", 503, "The service is currently unavailable."},
	fcmInternal:         {"INTERNAL", 500, "Internal error encountered."},
	fcmThirdPartyAuth:   {"UNAUTHENTICATED", 401, "Auth error from APNS or Web Push Service"},
	fcmUnspecified:      {"UNKNOWN", 500, "Unknown error."},
}

// FCMConfig configures an FCM HTTP v1 simulator. The zero value serves on a random loopback
// port and trusts no service account (AddServiceAccount / NewServiceAccount).
type FCMConfig struct {
	Addr            string   // listen address; default 127.0.0.1:0
	ServiceAccounts [][]byte // service-account JSON files whose keys the token endpoint trusts
	// AccessTokenTTL is the expires_in of issued access tokens; default 1 h. Shorten it to
	// exercise a sender's refresh.
	AccessTokenTTL time.Duration
	// QuotaPerMinute > 0 limits messages per project over a sliding minute; beyond it the
	// answer is 429 QUOTA_EXCEEDED with Retry-After (real default: 600,000).
	QuotaPerMinute int
	// MaxConcurrentStreams is advertised in SETTINGS; default 100 like Google's front ends.
	MaxConcurrentStreams int
	Record               int  // keep up to this many accepted messages for Sent()
	NoTokenStats         bool // turn off Stats.PerToken / PerTopic
	Now                  func() time.Time

	Knobs
}

// Validate reports a config the simulator cannot honour.
func (c *FCMConfig) Validate() error {
	if c.ErrorRate < 0 || c.ErrorRate > 1 || c.InvalidTokenRate < 0 || c.InvalidTokenRate > 1 {
		return errors.New("invalid FCM simulator config: rates must be within [0, 1]")
	}
	if c.Latency < 0 || c.Jitter < 0 || c.RatePerSecond < 0 || c.AccessTokenTTL < 0 ||
		c.QuotaPerMinute < 0 || c.MaxConcurrentStreams < 0 || c.Record < 0 {
		return errors.New("invalid FCM simulator config: durations, rates and counts must not be negative")
	}
	return nil
}

// FCM is a running FCM HTTP v1 simulator with its OAuth2 token endpoint. Sends go to
// URL()+"/v1/projects/<project>/messages:send"; Sent holds the messages FCMConfig.Record keeps.
type FCM struct {
	cfg      FCMConfig
	now      func() time.Time
	endpoint // srv and rec: URL, ClientTLS, CertPEM, Close, Stats, Sent
	auth     *fcmAuth
	faults   *faults
	seq      atomic.Uint64 // message id sequence

	tokMu  sync.RWMutex
	tokens map[string]fcmTokenState // guarded by tokMu

	quotaMu sync.Mutex
	quota   map[string]*minuteWindow // per project, guarded by quotaMu
}

type fcmTokenState uint8

const (
	fcmTokenUnregistered fcmTokenState = iota + 1
	fcmTokenOtherSender
	fcmTokenBad
)

// NewFCM starts an FCM simulator.
func NewFCM(cfg FCMConfig) (*FCM, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.AccessTokenTTL == 0 {
		cfg.AccessTokenTTL = time.Hour
	}
	if cfg.MaxConcurrentStreams == 0 {
		cfg.MaxConcurrentStreams = 100
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &FCM{
		cfg:      cfg,
		now:      cfg.Now,
		auth:     &fcmAuth{accounts: make(map[string]fcmAccount), tokens: make(map[string]accessToken)},
		faults:   newFaults(cfg.Knobs),
		endpoint: endpoint{rec: newRecorder(cfg.NoTokenStats, cfg.Record, &outage{now: cfg.Now})},
		tokens:   make(map[string]fcmTokenState),
		quota:    make(map[string]*minuteWindow),
	}
	for _, sa := range cfg.ServiceAccounts {
		if _, err := s.auth.add(sa); err != nil {
			return nil, fmt.Errorf("cannot start FCM simulator: %w", err)
		}
	}
	srv, err := startServer(serverOptions{
		addr:       cfg.Addr,
		handler:    s,
		http1:      true,
		maxStreams: cfg.MaxConcurrentStreams,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot start FCM simulator: %w", err)
	}
	s.srv = srv
	return s, nil
}

// TokenURL is the OAuth2 token endpoint (the token_uri of service accounts it trusts).
func (s *FCM) TokenURL() string { return s.srv.url() + "/token" }

// Reset zeroes the counters, recorded messages and quota windows; accounts, issued access
// tokens, token states and scripted faults stay.
func (s *FCM) Reset() {
	s.rec.reset()
	s.quotaMu.Lock()
	clear(s.quota)
	s.quotaMu.Unlock()
}

// AddServiceAccount trusts a service-account JSON file (its key signs token requests).
func (s *FCM) AddServiceAccount(saJSON []byte) error {
	_, err := s.auth.add(saJSON)
	return err
}

// NewServiceAccount makes a service account for projectID pointing at this simulator's token
// endpoint and trusts it.
func (s *FCM) NewServiceAccount(projectID string) ([]byte, error) {
	sa, err := NewServiceAccount(projectID, s.TokenURL())
	if err != nil {
		return nil, err
	}
	return sa, s.AddServiceAccount(sa)
}

// ExpireAccessTokens invalidates every issued access token (the next send gets 401).
func (s *FCM) ExpireAccessTokens() {
	s.auth.mu.Lock()
	clear(s.auth.tokens)
	s.auth.mu.Unlock()
}

// MarkUnregistered makes token answer 404 UNREGISTERED.
func (s *FCM) MarkUnregistered(token string) { s.setToken(token, fcmTokenUnregistered) }

// MarkSenderMismatch makes token answer 403 SENDER_ID_MISMATCH (issued for another project).
func (s *FCM) MarkSenderMismatch(token string) { s.setToken(token, fcmTokenOtherSender) }

// MarkBadToken makes token answer 400 INVALID_ARGUMENT with a violation on message.token.
func (s *FCM) MarkBadToken(token string) { s.setToken(token, fcmTokenBad) }

// ClearToken forgets any state set for token.
func (s *FCM) ClearToken(token string) {
	s.tokMu.Lock()
	delete(s.tokens, token)
	s.tokMu.Unlock()
}

func (s *FCM) setToken(token string, st fcmTokenState) {
	s.tokMu.Lock()
	s.tokens[token] = st
	s.tokMu.Unlock()
}

// Inject scripts the answer to the next n send requests. Fault.Reason is an FCM errorCode
// (UNAVAILABLE, INTERNAL, QUOTA_EXCEEDED, ...); empty picks the one for Status.
func (s *FCM) Inject(n int, f Fault) { s.faults.inject(n, f) }

// PendingFaults is how many scripted answers are not yet used.
func (s *FCM) PendingFaults() int { return s.faults.pending() }

// StartOutage makes every send request, from now on, get the answer of each phase in turn
// (for its duration), replacing any outage in force; see Outage.
func (s *FCM) StartOutage(phases ...Outage) error { return s.rec.outage.begin(phases) }

// EndOutage ends the outage in force, if any.
func (s *FCM) EndOutage() { s.rec.outage.end() }

const (
	fcmPathPrefix = "/v1/projects/"
	fcmPathSuffix = "/messages:send"
)

func (s *FCM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == "/token" {
		s.serveToken(w, r)
		return
	}
	if strings.HasPrefix(path, "/_") && s.rec.serveControl(w, r, s.Reset, s.faults) {
		return
	}
	project, ok := strings.CutPrefix(path, fcmPathPrefix)
	if ok {
		project, ok = strings.CutSuffix(project, fcmPathSuffix)
	}
	if !ok || project == "" || strings.Contains(project, "/") {
		s.googleError(w, http.StatusNotFound, "NOT_FOUND", "", "Requested entity was not found.", nil)
		return
	}
	if r.Method != http.MethodPost {
		s.googleError(w, http.StatusNotFound, "NOT_FOUND", "", "Method not found.", nil)
		return
	}
	answer := func(f Fault) { s.fault(w, f) }
	if s.intercept(w, r, s.faults, s.now(), Fault{Status: http.StatusServiceUnavailable}, answer, answer) {
		return
	}
	authz := headerValue(r.Header, "Authorization")
	tok, ok := cutPrefixFold(authz, "bearer ")
	if authz == "" || !ok {
		w.Header().Set("Www-Authenticate", `Bearer realm="https://accounts.google.com/"`)
		s.googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "",
			"Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.", nil)
		return
	}
	grant, ok := s.auth.lookup(tok, s.now())
	if !ok {
		w.Header().Set("Www-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
		s.googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "",
			"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.", nil)
		return
	}
	if grant.project != project {
		s.googleError(w, http.StatusForbidden, "PERMISSION_DENIED", "",
			"Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/"+project+"' (or it may not exist).", nil)
		return
	}
	if s.cfg.QuotaPerMinute > 0 {
		if retry, ok := s.takeQuota(project); !ok {
			w.Header().Set("Retry-After", strconv.FormatInt(retry, 10))
			s.fcmError(w, fcmQuotaExceeded, nil)
			return
		}
	}
	buf := getBigBuf()
	defer putBigBuf(buf)
	body, tooLarge, err := readBody(r.Body, buf, fcmMaxRequest)
	if err != nil {
		return
	}
	if tooLarge {
		s.fcmError(w, fcmInvalidArgument, &violation{field: "message", desc: "Message is too big."})
		return
	}
	req, v := decodeFCM(body)
	if v != nil {
		s.fcmError(w, fcmInvalidArgument, v)
		return
	}
	m := req.Message
	if m.Token != "" {
		if code, v := s.tokenAnswer(m.Token); code != "" {
			s.fcmError(w, code, v)
			return
		}
	}
	if req.ValidateOnly || req.ValidateOnlyC {
		s.rec.validateOnly()
		writeJSON(w, http.StatusOK, fcmName{Name: "projects/" + project + "/messages/fake_message_id"})
		return
	}
	name := fmt.Sprintf("projects/%s/messages/0:%d%%%x", project, s.now().UnixMicro(), s.seq.Add(1))
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintf(w, "{\n  \"name\": %q\n}\n", name)
	target, topic := m.Token, false
	switch {
	case m.Topic != "":
		target, topic = "topic:"+strings.TrimPrefix(m.Topic, "/topics/"), true
	case m.Condition != "":
		target, topic = "condition:"+m.Condition, true
	}
	s.rec.accepted(target, topic, func() Sent {
		return Sent{Target: target, Project: project, Body: append(json.RawMessage(nil), body...), NotifyID: fcmNotifyID(body), Peer: r.RemoteAddr}
	})
}

type fcmName struct {
	Name string `json:"name"`
}

// tokenAnswer returns the errorCode (or "") the registry gives a device token.
func (s *FCM) tokenAnswer(token string) (string, *violation) {
	badToken := &violation{field: "message.token", desc: "The registration token is not a valid FCM registration token"}
	if !validFCMToken(token) {
		return fcmInvalidArgument, badToken
	}
	s.tokMu.RLock()
	st, ok := s.tokens[token]
	s.tokMu.RUnlock()
	if ok {
		switch st {
		case fcmTokenUnregistered:
			return fcmUnregistered, nil
		case fcmTokenOtherSender:
			return fcmSenderIDMismatch, nil
		case fcmTokenBad:
			return fcmInvalidArgument, badToken
		}
	}
	if IsDeadToken(token, s.cfg.InvalidTokenRate, s.cfg.Seed) {
		return fcmUnregistered, nil
	}
	return "", nil
}

// validFCMToken accepts the registration-token alphabet (base64url plus ':' and '.').
func validFCMToken(t string) bool {
	if len(t) > 4096 {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == ':' || c == '.') {
			return false
		}
	}
	return true
}

func (s *FCM) takeQuota(project string) (retryAfter int64, ok bool) {
	now := s.now().Unix()
	s.quotaMu.Lock()
	defer s.quotaMu.Unlock()
	w := s.quota[project]
	if w == nil {
		w = &minuteWindow{}
		s.quota[project] = w
	}
	return w.take(now, int64(s.cfg.QuotaPerMinute))
}

// minuteWindow counts events over the last 60 seconds in one-second buckets.
type minuteWindow struct {
	secs   [60]int64
	counts [60]int64
}

// take counts one event at now if fewer than limit happened in the last minute; otherwise it
// returns the seconds until the oldest counted second leaves the window.
func (m *minuteWindow) take(now, limit int64) (int64, bool) {
	var total int64
	oldest := now
	for i := range m.secs {
		if m.secs[i] > now-60 && m.counts[i] > 0 {
			total += m.counts[i]
			oldest = min(oldest, m.secs[i])
		}
	}
	if total >= limit {
		return max(oldest+60-now, 1), false
	}
	i := now % 60
	if m.secs[i] != now {
		m.secs[i], m.counts[i] = now, 0
	}
	m.counts[i]++
	return 0, true
}

func (s *FCM) fault(w http.ResponseWriter, f Fault) {
	code := f.Reason
	if code == "" {
		switch f.Status {
		case 500:
			code = fcmInternal
		case 429:
			code = fcmQuotaExceeded
		case 401:
			code = fcmThirdPartyAuth
		default:
			code = fcmUnavailable
		}
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	s.fcmError(w, code, nil)
}

// fcmError answers with an FCM errorCode in Google's error shape.
func (s *FCM) fcmError(w http.ResponseWriter, code string, v *violation) {
	c, ok := fcmCodes[code]
	if !ok {
		c = fcmCodes[fcmUnspecified]
	}
	msg := c.message
	if v != nil {
		msg = v.message()
	}
	details := []any{map[string]any{
		"@type":     "type.googleapis.com/google.firebase.fcm.v1.FcmError",
		"errorCode": code,
	}}
	if v != nil {
		details = append(details, map[string]any{
			"@type":           "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []map[string]string{{"field": v.field, "description": v.desc}},
		})
	}
	s.googleError(w, c.http, c.status, code, msg, details)
}

// googleError writes {"error":{code,message,status,details}}; reason (errorCode or status)
// is what Stats counts.
func (s *FCM) googleError(w http.ResponseWriter, httpStatus int, status, code, msg string, details []any) {
	body := map[string]any{"code": httpStatus, "message": msg, "status": status}
	if details != nil {
		body["details"] = details
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	writeJSON(w, httpStatus, map[string]any{"error": body})
	reason := code
	if reason == "" {
		reason = status
	}
	s.rec.answer(httpStatus, reason)
}

// bigBufPool holds FCM request buffers (requests are bigger than the payload they carry).
var bigBufPool = sync.Pool{New: func() any { b := make([]byte, fcmMaxRequest+1); return &b }}

func getBigBuf() *[]byte  { return bigBufPool.Get().(*[]byte) }
func putBigBuf(b *[]byte) { bigBufPool.Put(b) }
