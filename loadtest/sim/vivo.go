package sim

import (
	"bytes"
	"cmp"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// vivo result codes (gateways.md §6.3, §6.1). The result field is a number.
const (
	VivoOK               = 0
	VivoTargetEmpty      = 10050
	VivoBadNotifyType    = 10054
	VivoTitleEmpty       = 10055
	VivoTitleTooLong     = 10056
	VivoDayQuota         = 10070
	VivoAppMismatch      = 10094
	VivoBadCategory      = 10096
	VivoCategoryMismatch = 10097
	VivoAppIDEmpty       = 10200
	VivoAppKeyEmpty      = 10201
	VivoAppKeyIllegal    = 10202
	VivoTimestampEmpty   = 10203
	VivoSignEmpty        = 10204
	VivoAppNotFound      = 10205
	VivoSignError        = 10206
	VivoTimestampBad     = 10207
	VivoAuthRate         = 10250
	VivoPayloadQuota     = 10252
	VivoInvalidUserCode  = 10302
	// VivoDefaultAuthCode answers an unknown or expired authToken and VivoDefaultParamCode the
	// field errors gateways.md gives no code for; both are this simulator's choice, since
	// vivo's codes for them are unconfirmed (gateways.md §9).
	VivoDefaultAuthCode  = 10000
	VivoDefaultParamCode = 10099
	vivoMaxTargets       = 1000
	vivoMaxTitle         = 40
	vivoMaxContent       = 100
	vivoMaxCustom        = 1024
	vivoMaxTTL           = 7 * 24 * 3600
	vivoAuthSkew         = 10 * time.Minute
)

// vivoStatus values of invalidUser (gateways.md §6.3).
const (
	VivoUserNotFound     = 1
	VivoUserUnsubscribed = 2
	VivoUserNotTest      = 4
)

// vivoCategories maps each second-level category to its classification (0 operational,
// 1 system), as vivo's message-classification rules list them [unconfirmed: secondary sources].
var vivoCategories = map[string]int{
	"IM": 1, "ACCOUNT": 1, "TODO": 1, "DEVICE_REMINDER": 1, "ORDER": 1, "SUBSCRIPTION": 1,
	"NEWS": 0, "CONTENT": 0, "MARKETING": 0, "SOCIAL": 0,
}

// VivoConfig configures a vivo push simulator (/message/auth, /message/send,
// /message/saveListPayload, /message/pushToList).
type VivoConfig struct {
	Addr string // listen address; default 127.0.0.1:0
	// TokenLife is how long an issued authToken is valid (default 24 h).
	TokenLife time.Duration
	// AuthPerSecond caps /message/auth calls per app per second (default 10); beyond: 10250.
	AuthPerSecond float64
	// DayQuota > 0 caps the targets accepted per app per day (test-mode sends exempt): 10070.
	DayQuota int64
	// PayloadQuota > 0 caps saveListPayload calls per app per day: 10252.
	PayloadQuota int64
	// TokensPerSecond > 0 caps targets per second per app; beyond it HTTP 503 + Retry-After 1.
	TokensPerSecond float64
	AuthCode        int // answer to an unknown or expired authToken (default VivoDefaultAuthCode)
	ParamCode       int // answer to other field errors (default VivoDefaultParamCode)
	Record          int
	NoTokenStats    bool
	Now             func() time.Time

	Knobs
}

// Vivo is a running vivo push simulator; its URL stands in for https://api-push.vivo.com.cn.
type Vivo struct {
	cfg      VivoConfig
	now      func() time.Time
	endpoint // srv and rec: URL, ClientTLS, CertPEM, Close, Stats, Sent
	faults   *faults
	seq      atomic.Uint64

	mu       sync.Mutex
	apps     map[string]*vivoApp  // appId → app
	tokens   map[string]vivoGrant // authToken → grant
	invalid  map[string]int       // regId → invalidUser status
	testRegs map[string]bool      // regIds registered as test devices
	tasks    map[string]vivoTask  // taskId → saved payload
}

type vivoApp struct {
	key, secret string
	auth        *tokenBucket
	rate        *tokenBucket
	requestIDs  map[string]bool
	day         string
	used        int64
	payloads    int64
	quota       int64 // > 0: this app's day quota instead of VivoConfig.DayQuota (SetDayQuota)
}

type vivoGrant struct {
	app     string
	expires time.Time
}

type vivoTask struct {
	app  string
	body json.RawMessage
}

// NewVivo starts a vivo simulator serving HTTP/2 and HTTP/1.1 over TLS.
func NewVivo(cfg VivoConfig) (*Vivo, error) {
	if cfg.ErrorRate < 0 || cfg.ErrorRate > 1 || cfg.InvalidTokenRate < 0 || cfg.InvalidTokenRate > 1 || cfg.TokenLife < 0 ||
		cfg.AuthPerSecond < 0 || cfg.DayQuota < 0 || cfg.PayloadQuota < 0 || cfg.TokensPerSecond < 0 || cfg.Record < 0 {
		return nil, errors.New("invalid vivo simulator config: rates within [0, 1], nothing negative")
	}
	cfg.TokenLife = cmp.Or(cfg.TokenLife, 24*time.Hour)
	cfg.AuthPerSecond = cmp.Or(cfg.AuthPerSecond, 10)
	cfg.AuthCode = cmp.Or(cfg.AuthCode, VivoDefaultAuthCode)
	cfg.ParamCode = cmp.Or(cfg.ParamCode, VivoDefaultParamCode)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Vivo{cfg: cfg, now: cfg.Now, faults: newFaults(cfg.Knobs), endpoint: endpoint{rec: newRecorder(cfg.NoTokenStats, cfg.Record, &outage{now: cfg.Now})},
		apps: map[string]*vivoApp{}, tokens: map[string]vivoGrant{}, invalid: map[string]int{}, testRegs: map[string]bool{}, tasks: map[string]vivoTask{}}
	srv, err := startServer(serverOptions{addr: cfg.Addr, handler: s, http1: true, maxStreams: 1000})
	if err != nil {
		return nil, fmt.Errorf("cannot start vivo simulator: %w", err)
	}
	s.srv = srv
	s.receipts = newReceiptPoster(s.rec)
	return s, nil
}

// Reset zeroes counters, recorded requests and day quotas.
func (s *Vivo) Reset() {
	s.rec.reset()
	s.mu.Lock()
	for _, a := range s.apps {
		a.used, a.payloads = 0, 0
	}
	s.mu.Unlock()
}

// NewApp registers a vivo app with a fresh appKey and appSecret.
func (s *Vivo) NewApp(appID string) (appKey, appSecret string) {
	appKey, appSecret = randHex(12), randHex(16)
	s.mu.Lock()
	s.apps[appID] = &vivoApp{key: appKey, secret: appSecret, auth: &tokenBucket{rate: s.cfg.AuthPerSecond},
		rate: &tokenBucket{rate: s.cfg.TokensPerSecond}, requestIDs: map[string]bool{}}
	s.mu.Unlock()
	return appKey, appSecret
}

// SetDayQuota gives the app its own day quota of targets (10070 beyond it), instead of
// VivoConfig.DayQuota: a load test parks one app of the simulator and not the others.
func (s *Vivo) SetDayQuota(appID string, n int64) {
	s.mu.Lock()
	if a := s.apps[appID]; a != nil {
		a.quota = n
	}
	s.mu.Unlock()
}

// ExpireTokens makes every issued authToken expired (a sender must authenticate again).
func (s *Vivo) ExpireTokens() {
	s.mu.Lock()
	for t, g := range s.tokens {
		g.expires = time.Time{}
		s.tokens[t] = g
	}
	s.mu.Unlock()
}

// MarkInvalid gives a regId an invalidUser status: VivoUserNotFound or VivoUserUnsubscribed.
func (s *Vivo) MarkInvalid(regID string, status int) {
	s.mu.Lock()
	s.invalid[regID] = status
	s.mu.Unlock()
}

// AddTestDevice registers a regId as a test device (pushMode 1 reaches only those).
func (s *Vivo) AddTestDevice(regID string) {
	s.mu.Lock()
	s.testRegs[regID] = true
	s.mu.Unlock()
}

// StartOutage makes every send request get the answer of each phase in turn; see Outage.
// The auth endpoint keeps working.
func (s *Vivo) StartOutage(phases ...Outage) error { return s.rec.outage.begin(phases) }

// EndOutage ends the outage in force, if any.
func (s *Vivo) EndOutage() { s.rec.outage.end() }

// Inject scripts the answer to the next n send requests: Reason is a vivo result code
// (HTTP 200); an empty Reason answers the bare HTTP Status.
func (s *Vivo) Inject(n int, f Fault) { s.faults.inject(n, f) }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// VivoInvalidUser is one invalid target of a vivo reply.
type VivoInvalidUser struct {
	UserID string `json:"userid"`
	Status int    `json:"status"`
}

// VivoReply is the body of every vivo answer. pushToList reports its invalid targets in
// InvalidUsers (shape unconfirmed: it mirrors single send's invalidUser, gateways.md §6.5).
type VivoReply struct {
	Result       int               `json:"result"`
	Desc         string            `json:"desc"`
	AuthToken    string            `json:"authToken,omitempty"`
	TaskID       string            `json:"taskId,omitempty"`
	InvalidUser  *VivoInvalidUser  `json:"invalidUser,omitempty"`
	InvalidUsers []VivoInvalidUser `json:"invalidUsers,omitempty"`
}

func (s *Vivo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_") && s.rec.serveControl(w, r, s.Reset, s.faults) {
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusNotFound)
		s.rec.answer(http.StatusNotFound, "404")
		return
	}
	switch r.URL.Path {
	case "/message/auth":
		s.serveAuth(w, r)
		return
	case "/message/send", "/message/saveListPayload", "/message/pushToList":
	default:
		w.WriteHeader(http.StatusNotFound)
		s.rec.answer(http.StatusNotFound, "404")
		return
	}
	// vivo answers an outage with a bare HTTP status (the phase's Reason is not used).
	status := func(f Fault) { s.status(w, f.Status, f.RetryAfter) }
	injected := func(f Fault) {
		if code, err := strconv.Atoi(f.Reason); err == nil {
			s.reply(w, VivoReply{Result: code, Desc: "injected fault"})
		} else {
			status(f)
		}
	}
	if s.intercept(w, r, s.faults, s.now(), Fault{Status: http.StatusServiceUnavailable}, status, injected) {
		return
	}
	s.mu.Lock()
	g, ok := s.tokens[r.Header.Get("authToken")]
	s.mu.Unlock()
	if !ok || !s.now().Before(g.expires) {
		s.reply(w, VivoReply{Result: s.cfg.AuthCode, Desc: "authToken invalid or expired"})
		return
	}
	body, tooLarge, err := readSmall(r.Body, 1<<20)
	if err != nil {
		return
	}
	var m map[string]json.RawMessage
	if tooLarge || !strings.HasPrefix(headerValue(r.Header, "Content-Type"), "application/json") || json.Unmarshal(body, &m) != nil {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "body must be a JSON object"})
		return
	}
	if appID := jsonScalar(m["appId"]); appID != g.app {
		s.reply(w, VivoReply{Result: VivoAppMismatch, Desc: "appId does not match the authToken"})
		return
	}
	switch r.URL.Path {
	case "/message/send":
		s.serveSend(w, g.app, body)
	case "/message/saveListPayload":
		s.serveSave(w, g.app, m)
	default:
		s.servePushToList(w, g.app, body)
	}
}

// jsonScalar is a JSON number or string as text ("" when neither).
func jsonScalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func (s *Vivo) serveAuth(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AppID     json.RawMessage `json:"appId"`
		AppKey    string          `json:"appKey"`
		Timestamp json.Number     `json:"timestamp"`
		Sign      string          `json:"sign"`
	}
	body, _, err := readSmall(r.Body, 64<<10)
	if err != nil {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	_ = dec.Decode(&in)
	appID := jsonScalar(in.AppID)
	fail := func(code int, desc string) {
		writeJSON(w, http.StatusOK, VivoReply{Result: code, Desc: desc})
	}
	switch {
	case appID == "":
		fail(VivoAppIDEmpty, "appId is empty")
		return
	case in.AppKey == "":
		fail(VivoAppKeyEmpty, "appKey is empty")
		return
	case in.Timestamp == "":
		fail(VivoTimestampEmpty, "timestamp is empty")
		return
	case in.Sign == "":
		fail(VivoSignEmpty, "sign is empty")
		return
	}
	s.mu.Lock()
	app := s.apps[appID]
	s.mu.Unlock()
	if app == nil {
		fail(VivoAppNotFound, "appId not found")
		return
	}
	if in.AppKey != app.key {
		fail(VivoAppKeyIllegal, "appKey illegal")
		return
	}
	ms, err := in.Timestamp.Int64()
	if d := s.now().Sub(time.UnixMilli(ms)); err != nil || d > vivoAuthSkew || d < -vivoAuthSkew {
		fail(VivoTimestampBad, "timestamp illegal")
		return
	}
	if in.Sign != VivoSign(appID, app.key, in.Timestamp.String(), app.secret) {
		fail(VivoSignError, "sign error")
		return
	}
	if !app.auth.take(s.now(), 1) {
		fail(VivoAuthRate, "auth calls exceed the rate limit")
		return
	}
	tok := randHex(16)
	s.mu.Lock()
	s.tokens[tok] = vivoGrant{app: appID, expires: s.now().Add(s.cfg.TokenLife)}
	s.mu.Unlock()
	s.rec.authToken()
	writeJSON(w, http.StatusOK, VivoReply{Result: VivoOK, Desc: "请求成功", AuthToken: tok})
}

// VivoSign is vivo's auth signature: lowercase hex MD5 of appId+appKey+timestamp+appSecret
// (gateways.md §6.1).
func VivoSign(appID, appKey, timestamp, appSecret string) string {
	sum := md5.Sum([]byte(strings.TrimSpace(appID) + strings.TrimSpace(appKey) + strings.TrimSpace(timestamp) + strings.TrimSpace(appSecret)))
	return hex.EncodeToString(sum[:])
}

// vivoMessage are the message fields of send and saveListPayload.
type vivoMessage struct {
	NotifyType      *int              `json:"notifyType"`
	Title           string            `json:"title"`
	Content         string            `json:"content"`
	TimeToLive      *int64            `json:"timeToLive"`
	SkipType        *int              `json:"skipType"`
	SkipContent     string            `json:"skipContent"`
	NetworkType     *int              `json:"networkType"`
	Classification  *int              `json:"classification"`
	Category        string            `json:"category"`
	ClientCustomMap map[string]string `json:"clientCustomMap"`
	RequestID       string            `json:"requestId"`
	NotifyID        *int64            `json:"notifyId"`
	PushMode        *int              `json:"pushMode"`
	Extra           map[string]string `json:"extra"` // callback, callback.param: a receipt (single sends only)
}

// check validates the message fields (gateways.md §6.2); 0 when they are fine.
func (s *Vivo) check(m *vivoMessage) (int, string) {
	switch {
	case m.NotifyType == nil || *m.NotifyType < 1 || *m.NotifyType > 4:
		return VivoBadNotifyType, "notifyType must be 1 to 4"
	case strings.TrimSpace(m.Title) == "":
		return VivoTitleEmpty, "title is empty"
	case utf8.RuneCountInString(m.Title) > vivoMaxTitle:
		return VivoTitleTooLong, "title is longer than 40 characters"
	case strings.TrimSpace(m.Content) == "" || utf8.RuneCountInString(m.Content) > vivoMaxContent:
		return s.cfg.ParamCode, "content must be 1 to 100 characters"
	case m.TimeToLive != nil && (*m.TimeToLive < 60 || *m.TimeToLive > vivoMaxTTL):
		return s.cfg.ParamCode, "timeToLive must be 60 seconds to 7 days"
	case m.SkipType == nil || *m.SkipType < 1 || *m.SkipType > 4:
		return s.cfg.ParamCode, "skipType must be 1 to 4"
	case utf8.RuneCountInString(m.SkipContent) > 1024:
		return s.cfg.ParamCode, "skipContent is longer than 1024 characters"
	case m.NetworkType != nil && *m.NetworkType != -1 && *m.NetworkType != 1:
		return s.cfg.ParamCode, "networkType must be -1 or 1"
	case m.NotifyID != nil && (*m.NotifyID < 1 || *m.NotifyID > 2147483647):
		return s.cfg.ParamCode, "notifyId out of range"
	case m.PushMode != nil && *m.PushMode != 0 && *m.PushMode != 1:
		return s.cfg.ParamCode, "pushMode must be 0 or 1"
	case m.RequestID == "" || len(m.RequestID) > 64:
		return s.cfg.ParamCode, "requestId is required, at most 64 characters"
	}
	if m.Classification != nil && *m.Classification != 0 && *m.Classification != 1 {
		return s.cfg.ParamCode, "classification must be 0 or 1"
	}
	if m.Category != "" {
		class, ok := vivoCategories[m.Category]
		if !ok {
			return VivoBadCategory, "category invalid"
		}
		if m.Classification != nil && *m.Classification != class {
			return VivoCategoryMismatch, "category does not match classification"
		}
	}
	n := 0
	for k, v := range m.ClientCustomMap {
		n += utf8.RuneCountInString(k) + utf8.RuneCountInString(v)
	}
	if n > vivoMaxCustom {
		return s.cfg.ParamCode, "clientCustomMap is longer than 1024 characters"
	}
	return 0, ""
}

// takeRequestID records a requestId of app; false when it was used before.
func (s *Vivo) takeRequestID(app, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[app]
	if a.requestIDs[id] {
		return false
	}
	a.requestIDs[id] = true
	return true
}

// userStatus is the invalidUser status of a regId (0: valid) for pushMode.
func (s *Vivo) userStatus(regID string, test bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !validVendorToken(regID):
		return VivoUserNotFound
	case s.invalid[regID] != 0:
		return s.invalid[regID]
	case IsDeadToken(regID, s.cfg.InvalidTokenRate, s.cfg.Seed):
		return VivoUserUnsubscribed
	case test && !s.testRegs[regID]:
		return VivoUserNotTest
	}
	return 0
}

// admit applies the per-second rate and, outside test mode, the day quota to n targets.
func (s *Vivo) admit(w http.ResponseWriter, app string, n int, test bool) bool {
	s.mu.Lock()
	a := s.apps[app]
	if s.cfg.TokensPerSecond > 0 && !a.rate.take(s.now(), n) {
		s.mu.Unlock()
		s.status(w, http.StatusServiceUnavailable, time.Second)
		return false
	}
	quota := s.cfg.DayQuota
	if a.quota > 0 {
		quota = a.quota
	}
	if quota > 0 && !test {
		s.rollDay(a)
		if a.used+int64(n) > quota {
			s.mu.Unlock()
			s.reply(w, VivoReply{Result: VivoDayQuota, Desc: "daily total quota exceeded"})
			return false
		}
		a.used += int64(n)
	}
	s.mu.Unlock()
	return true
}

// rollDay starts a new quota day for a; the caller holds s.mu. vivo counts days in China
// Standard Time (UTC+8) [unconfirmed].
func (s *Vivo) rollDay(a *vivoApp) {
	if day := s.now().In(chinaTime).Format(time.DateOnly); a.day != day {
		a.day, a.used, a.payloads = day, 0, 0
	}
}

// chinaTime is China Standard Time, the day boundary of the China vendors' daily quotas.
var chinaTime = time.FixedZone("CST", 8*3600)

func (s *Vivo) serveSend(w http.ResponseWriter, app string, body []byte) {
	var m vivoMessage
	var target struct {
		RegID string `json:"regId"`
		Alias string `json:"alias"`
	}
	if json.Unmarshal(body, &m) != nil || json.Unmarshal(body, &target) != nil {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "bad field types"})
		return
	}
	if target.RegID == "" && target.Alias == "" {
		s.reply(w, VivoReply{Result: VivoTargetEmpty, Desc: "regId and alias are both empty"})
		return
	}
	if code, desc := s.check(&m); code != 0 {
		s.reply(w, VivoReply{Result: code, Desc: desc})
		return
	}
	if !s.takeRequestID(app, m.RequestID) {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "requestId repeated"})
		return
	}
	id := cmp.Or(target.RegID, target.Alias)
	test := m.PushMode != nil && *m.PushMode == 1
	if st := s.userStatus(id, test); st != 0 {
		s.reply(w, VivoReply{Result: VivoInvalidUserCode, Desc: "invalid user", InvalidUser: &VivoInvalidUser{UserID: id, Status: st}})
		return
	}
	if !s.admit(w, app, 1, test) {
		return
	}
	if cb := m.Extra["callback"]; len(cb) > 128 || len(m.Extra["callback.param"]) > 64 {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "extra.callback or callback.param too long"})
		return
	}
	taskID := s.taskID()
	writeJSON(w, http.StatusOK, VivoReply{Result: VivoOK, Desc: "请求成功", TaskID: taskID})
	// The receipt [format unconfirmed]: arrivals only, of production single sends.
	if cb := m.Extra["callback"]; cb != "" && !test && !ReceiptUninstalled(id, s.cfg.ReceiptUninstalledRate, s.cfg.Seed) {
		b, _ := json.Marshal(map[string]any{taskID: map[string]any{"param": m.Extra["callback.param"], "targets": id, "ackTime": s.now().UnixMilli()}})
		s.receipts.post(receiptJob{url: cb, contentType: "application/json", body: b})
	}
	s.rec.acceptedMany([]string{id}, "0", func() Sent {
		return Sent{Target: id, Project: app, Body: append(json.RawMessage(nil), body...), NotifyID: vivoNotifyID(body)}
	})
}

func (s *Vivo) taskID() string { return strconv.FormatUint(121397329+s.seq.Add(1), 10) }

func (s *Vivo) serveSave(w http.ResponseWriter, app string, raw map[string]json.RawMessage) {
	body, _ := json.Marshal(raw)
	var m vivoMessage
	if json.Unmarshal(body, &m) != nil {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "bad field types"})
		return
	}
	if _, ok := raw["regId"]; ok {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "saveListPayload takes no target"})
		return
	}
	if code, desc := s.check(&m); code != 0 {
		s.reply(w, VivoReply{Result: code, Desc: desc})
		return
	}
	if !s.takeRequestID(app, m.RequestID) {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "requestId repeated"})
		return
	}
	s.mu.Lock()
	a := s.apps[app]
	s.rollDay(a)
	if s.cfg.PayloadQuota > 0 && a.payloads >= s.cfg.PayloadQuota {
		s.mu.Unlock()
		s.reply(w, VivoReply{Result: VivoPayloadQuota, Desc: "batch payload count exceeded"})
		return
	}
	a.payloads++
	id := s.taskID()
	s.tasks[id] = vivoTask{app: app, body: body}
	s.mu.Unlock()
	s.reply(w, VivoReply{Result: VivoOK, Desc: "请求成功", TaskID: id})
}

func (s *Vivo) servePushToList(w http.ResponseWriter, app string, body []byte) {
	var in struct {
		RegIDs    []string `json:"regIds"`
		Aliases   []string `json:"aliases"`
		TaskID    string   `json:"taskId"`
		RequestID string   `json:"requestId"`
		PushMode  *int     `json:"pushMode"`
	}
	if json.Unmarshal(body, &in) != nil {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "bad field types"})
		return
	}
	ids := in.RegIDs
	if len(ids) == 0 {
		ids = in.Aliases
	}
	if len(ids) == 0 {
		s.reply(w, VivoReply{Result: VivoTargetEmpty, Desc: "regIds and aliases are both empty"})
		return
	}
	if len(ids) < 2 || len(ids) > vivoMaxTargets {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "pushToList takes 2 to 1000 targets"})
		return
	}
	if in.RequestID == "" || len(in.RequestID) > 64 || (in.PushMode != nil && *in.PushMode != 0 && *in.PushMode != 1) {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "requestId is required; pushMode must be 0 or 1"})
		return
	}
	s.mu.Lock()
	task, ok := s.tasks[in.TaskID]
	s.mu.Unlock()
	if !ok || task.app != app {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "taskId unknown"})
		return
	}
	if !s.takeRequestID(app, in.RequestID) {
		s.reply(w, VivoReply{Result: s.cfg.ParamCode, Desc: "requestId repeated"})
		return
	}
	test := in.PushMode != nil && *in.PushMode == 1
	var good []string
	var bad []VivoInvalidUser
	for _, id := range ids {
		if st := s.userStatus(id, test); st != 0 {
			bad = append(bad, VivoInvalidUser{UserID: id, Status: st})
		} else {
			good = append(good, id)
		}
	}
	if !s.admit(w, app, len(ids), test) {
		return
	}
	writeJSON(w, http.StatusOK, VivoReply{Result: VivoOK, Desc: "请求成功", TaskID: in.TaskID, InvalidUsers: bad})
	s.rec.acceptedMany(good, "0", func() Sent {
		return Sent{Target: strings.Join(good, ","), Project: app, Body: append(json.RawMessage(nil), task.body...), NotifyID: vivoNotifyID(task.body)}
	})
}

// reply writes a non-accepting vivo answer (HTTP 200) and counts it.
func (s *Vivo) reply(w http.ResponseWriter, r VivoReply) {
	writeJSON(w, http.StatusOK, r)
	if r.Result != VivoOK {
		s.rec.answer(http.StatusOK, strconv.Itoa(r.Result))
	}
}

// status answers a bare HTTP status (server error, traffic control).
func (s *Vivo) status(w http.ResponseWriter, status int, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(status)
	s.rec.answer(status, strconv.Itoa(status))
}
