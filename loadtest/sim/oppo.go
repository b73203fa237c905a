package sim

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// OPPO (HeyTap) push return codes (gateways.md §7.3). The code field is a number.
const (
	OppoOK             = 0
	OppoUnavailable    = -1
	OppoFlowControl    = -2
	OppoBadToken       = 11
	OppoCallLimit      = 13
	OppoBadAppKey      = 14
	OppoNoAppKey       = 15
	OppoBadSign        = 16
	OppoNoSign         = 17
	OppoNoTimestamp    = 18
	OppoBadTimestamp   = 19
	OppoNoToken        = 29
	OppoDayLimit       = 33
	OppoMissingArg     = 40
	OppoBadArg         = 41
	OppoBadCategory    = 67
	oppoMaxTargets     = 1000
	oppoMaxTitle       = 50
	oppoMaxSubTitle    = 10
	oppoMaxContent     = 50
	oppoMaxLongContent = 128
	oppoMaxURL         = 2000
	oppoMaxParams      = 4000
	oppoMaxTTL         = 10 * 24 * 3600
	oppoAuthWindow     = 10 * time.Minute
	// OppoDefaultInvalidCode and OppoDefaultUnsubscribedCode are this simulator's business
	// codes for a regId that is invalid or unsubscribed: OPPO's are unconfirmed (gateways.md §9).
	OppoDefaultInvalidCode      = 10000
	OppoDefaultUnsubscribedCode = 10001
)

// OppoConfig configures an OPPO push simulator (/server/v1/auth and the unicast paths).
type OppoConfig struct {
	Addr string // listen address; default 127.0.0.1:0
	// Region is "cn" (default) or "intl": the other region's regIds are refused with
	// OppoBadArg per target (the real service's behaviour is unconfirmed); "any" serves both
	// (one simulator standing in for both hosts, as --sim runs it).
	Region string
	// TokenLife is how long an issued auth_token is valid (default 24 h).
	TokenLife time.Duration
	// DayQuota > 0 caps the targets accepted per app per China day: 33.
	DayQuota int64
	// TokensPerSecond > 0 caps targets per second per app (OPPO's QPS counts messages): beyond
	// it the answer is FlowCode.
	TokensPerSecond float64
	FlowCode        int // default OppoFlowControl (−2); 55 is the other documented one
	// RequireChannel refuses notifications without channel_id (40), as OPPO does for apps
	// targeting Android 8+.
	RequireChannel   bool
	InvalidCode      int // business code of an invalid regId (default OppoDefaultInvalidCode)
	UnsubscribedCode int // ... of an unsubscribed one (default OppoDefaultUnsubscribedCode)
	Record           int
	NoTokenStats     bool
	Now              func() time.Time

	Knobs
}

// Oppo is a running OPPO push simulator; its URL stands in for https://api.push.oppomobile.com
// (or the overseas host).
type Oppo struct {
	cfg      OppoConfig
	now      func() time.Time
	endpoint // srv and rec: URL, ClientTLS, CertPEM, Close, Stats, Sent
	faults   *faults
	seq      atomic.Uint64

	mu      sync.Mutex
	apps    map[string]*oppoApp  // app_key → app
	tokens  map[string]oppoGrant // auth_token → grant
	invalid map[string]int       // regId → business code
}

type oppoApp struct {
	secret string
	rate   *tokenBucket
	day    string
	used   int64
}

type oppoGrant struct {
	app     string
	expires time.Time
}

// NewOppo starts an OPPO simulator serving HTTP/2 and HTTP/1.1 over TLS.
func NewOppo(cfg OppoConfig) (*Oppo, error) {
	if cfg.ErrorRate < 0 || cfg.ErrorRate > 1 || cfg.InvalidTokenRate < 0 || cfg.InvalidTokenRate > 1 || cfg.TokenLife < 0 ||
		cfg.DayQuota < 0 || cfg.TokensPerSecond < 0 || cfg.Record < 0 || (cfg.Region != "" && cfg.Region != "cn" && cfg.Region != "intl" && cfg.Region != "any") {
		return nil, errors.New("invalid OPPO simulator config: rates within [0, 1], nothing negative, region cn, intl or any")
	}
	cfg.Region = cmp.Or(cfg.Region, "cn")
	cfg.TokenLife = cmp.Or(cfg.TokenLife, 24*time.Hour)
	cfg.FlowCode = cmp.Or(cfg.FlowCode, OppoFlowControl)
	cfg.InvalidCode = cmp.Or(cfg.InvalidCode, OppoDefaultInvalidCode)
	cfg.UnsubscribedCode = cmp.Or(cfg.UnsubscribedCode, OppoDefaultUnsubscribedCode)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Oppo{cfg: cfg, now: cfg.Now, faults: newFaults(cfg.Knobs), endpoint: endpoint{rec: newRecorder(cfg.NoTokenStats, cfg.Record, &outage{now: cfg.Now})},
		apps: map[string]*oppoApp{}, tokens: map[string]oppoGrant{}, invalid: map[string]int{}}
	srv, err := startServer(serverOptions{addr: cfg.Addr, handler: s, http1: true, maxStreams: 1000})
	if err != nil {
		return nil, fmt.Errorf("cannot start OPPO simulator: %w", err)
	}
	s.srv = srv
	s.receipts = newReceiptPoster(s.rec)
	return s, nil
}

// Reset zeroes counters, recorded messages and day quotas.
func (s *Oppo) Reset() {
	s.rec.reset()
	s.mu.Lock()
	for _, a := range s.apps {
		a.used = 0
	}
	s.mu.Unlock()
}

// NewApp registers an app with a fresh app_key and master secret.
func (s *Oppo) NewApp() (appKey, masterSecret string) {
	appKey, masterSecret = randHex(12), randHex(16)
	s.AddApp(appKey, masterSecret)
	return appKey, masterSecret
}

// AddApp registers an app (the same app in a CN and an intl simulator).
func (s *Oppo) AddApp(appKey, masterSecret string) {
	s.mu.Lock()
	s.apps[appKey] = &oppoApp{secret: masterSecret, rate: &tokenBucket{rate: s.cfg.TokensPerSecond}}
	s.mu.Unlock()
}

// ExpireTokens makes every issued auth_token expired.
func (s *Oppo) ExpireTokens() {
	s.mu.Lock()
	for t, g := range s.tokens {
		g.expires = time.Time{}
		s.tokens[t] = g
	}
	s.mu.Unlock()
}

// MarkInvalid makes a regId invalid (unsubscribed false) or unsubscribed.
func (s *Oppo) MarkInvalid(regID string, unsubscribed bool) {
	code := s.cfg.InvalidCode
	if unsubscribed {
		code = s.cfg.UnsubscribedCode
	}
	s.mu.Lock()
	s.invalid[regID] = code
	s.mu.Unlock()
}

// StartOutage makes every push request get the answer of each phase in turn; see Outage.
// The auth endpoint keeps working.
func (s *Oppo) StartOutage(phases ...Outage) error { return s.rec.outage.begin(phases) }

// EndOutage ends the outage in force, if any.
func (s *Oppo) EndOutage() { s.rec.outage.end() }

// Inject scripts the answer to the next n push requests: Reason is an OPPO code (HTTP 200);
// an empty Reason answers the bare HTTP Status.
func (s *Oppo) Inject(n int, f Fault) { s.faults.inject(n, f) }

// OppoSign is OPPO's auth signature: lowercase hex SHA-256 of appKey+timestamp+masterSecret
// (gateways.md §7.1).
func OppoSign(appKey, timestamp, masterSecret string) string {
	sum := sha256.Sum256([]byte(appKey + timestamp + masterSecret))
	return hex.EncodeToString(sum[:])
}

// OppoReply is the body of every OPPO answer; Data is an object (auth, unicast) or an array
// of OppoItem (unicast_batch).
type OppoReply struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// OppoItem is one target's answer in a batch.
type OppoItem struct {
	MessageID      string `json:"messageId,omitempty"`
	RegistrationID string `json:"registrationId"`
	ErrorCode      int    `json:"errorCode,omitempty"`
	ErrorMessage   string `json:"errorMessage,omitempty"`
}

const (
	oppoUnicast      = "/server/v1/message/notification/unicast"
	oppoUnicastBatch = "/server/v1/message/notification/unicast_batch"
)

func (s *Oppo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_") && s.rec.serveControl(w, r, s.Reset, s.faults) {
		return
	}
	if r.Method != http.MethodPost {
		s.reply(w, OppoReply{Code: 12, Message: "Http Action Not Allowed"})
		return
	}
	switch r.URL.Path {
	case "/server/v1/auth":
		s.serveAuth(w, r)
		return
	case oppoUnicast, oppoUnicastBatch:
	default:
		s.reply(w, OppoReply{Code: 20, Message: "Method Not Exist"})
		return
	}
	// OPPO answers an outage with a bare HTTP status (the phase's Reason is not used).
	status := func(f Fault) { s.status(w, f.Status, f.RetryAfter) }
	injected := func(f Fault) {
		if code, err := strconv.Atoi(f.Reason); err == nil {
			s.reply(w, OppoReply{Code: code, Message: "injected fault"})
		} else {
			status(f)
		}
	}
	if s.intercept(w, r, s.faults, s.now(), Fault{Status: http.StatusServiceUnavailable}, status, injected) {
		return
	}
	form, ok := s.form(w, r)
	if !ok {
		return
	}
	tok := form.Get("auth_token")
	if tok == "" {
		s.reply(w, OppoReply{Code: OppoNoToken, Message: "Auth Token Is Empty"})
		return
	}
	s.mu.Lock()
	g, ok := s.tokens[tok]
	s.mu.Unlock()
	if !ok || !s.now().Before(g.expires) {
		s.reply(w, OppoReply{Code: OppoBadToken, Message: "Invalid AuthToken"})
		return
	}
	if r.URL.Path == oppoUnicast {
		s.serveUnicast(w, g.app, form.Get("message"))
	} else {
		s.serveBatch(w, g.app, form.Get("messages"))
	}
}

func (s *Oppo) form(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	body, tooLarge, err := readSmall(r.Body, 4<<20)
	if err != nil {
		return nil, false
	}
	form, err := url.ParseQuery(string(body))
	if tooLarge || err != nil || !strings.HasPrefix(headerValue(r.Header, "Content-Type"), "application/x-www-form-urlencoded") {
		s.reply(w, OppoReply{Code: 24, Message: "Invalid Encoding or Content-Type"})
		return nil, false
	}
	return form, true
}

func (s *Oppo) serveAuth(w http.ResponseWriter, r *http.Request) {
	form, ok := s.form(w, r)
	if !ok {
		return
	}
	fail := func(code int, msg string) { writeJSON(w, http.StatusOK, OppoReply{Code: code, Message: msg}) }
	key, ts, sign := form.Get("app_key"), form.Get("timestamp"), form.Get("sign")
	switch {
	case key == "":
		fail(OppoNoAppKey, "App Key Is Empty")
		return
	case sign == "":
		fail(OppoNoSign, "Sign Is Empty")
		return
	case ts == "":
		fail(OppoNoTimestamp, "Timestamp Is Empty")
		return
	}
	s.mu.Lock()
	app := s.apps[key]
	s.mu.Unlock()
	if app == nil {
		fail(OppoBadAppKey, "Invalid AppKey")
		return
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if d := s.now().Sub(time.UnixMilli(ms)); err != nil || len(ts) != 13 || d > oppoAuthWindow || d < -time.Minute {
		fail(OppoBadTimestamp, "Invalid Timestamp")
		return
	}
	if sign != OppoSign(key, ts, app.secret) {
		fail(OppoBadSign, "Sign Is Invalid")
		return
	}
	tok := randHex(16)
	s.mu.Lock()
	s.tokens[tok] = oppoGrant{app: key, expires: s.now().Add(s.cfg.TokenLife)}
	s.mu.Unlock()
	s.rec.authToken()
	writeJSON(w, http.StatusOK, OppoReply{Code: OppoOK, Message: "Success", Data: map[string]any{"auth_token": tok, "create_time": s.now().UnixMilli()}})
}

// oppoMessage is one unicast message.
type oppoMessage struct {
	TargetType   int               `json:"target_type"`
	TargetValue  string            `json:"target_value"`
	Notification *oppoNotification `json:"notification"`
}

type oppoNotification struct {
	Title            string `json:"title"`
	SubTitle         string `json:"sub_title"`
	Content          string `json:"content"`
	Style            *int   `json:"style"`
	ClickActionType  *int   `json:"click_action_type"`
	ClickActionURL   string `json:"click_action_url"`
	ActionParameters string `json:"action_parameters"`
	OffLine          *bool  `json:"off_line"`
	OffLineTTL       *int64 `json:"off_line_ttl"`
	ChannelID        string `json:"channel_id"`
	Category         string `json:"category"`
	NotifyLevel      *int   `json:"notify_level"`
	CallBackURL      string `json:"call_back_url"`
	CallBackParam    string `json:"call_back_parameter"`
}

// oppoCategories are the message categories of OPPO's classification, with notify_level
// 1 (bar), 2 (bar and lock screen) and 16 (bar, lock screen, banner, sound and vibration)
// [unconfirmed: secondary sources].
var oppoCategories = map[string]bool{"IM": true, "ACCOUNT": true, "DEVICE_REMINDER": true, "ORDER": true, "TODO": true,
	"SUBSCRIPTION": true, "NEWS": true, "CONTENT": true, "MARKETING": true, "SOCIAL": true}

// check validates one message (gateways.md §7.2); 0 when it is fine.
func (s *Oppo) check(m *oppoMessage) (int, string) {
	if m.TargetType != 2 && m.TargetType != 5 {
		return OppoBadArg, "target_type must be 2 (registration_id) or 5 (alias)"
	}
	if m.TargetValue == "" {
		return OppoMissingArg, "target_value is empty"
	}
	n := m.Notification
	switch {
	case n == nil:
		return OppoMissingArg, "notification is missing"
	case strings.TrimSpace(n.Title) == "" || strings.TrimSpace(n.Content) == "":
		return OppoMissingArg, "title and content are required"
	case utf8.RuneCountInString(n.Title) > oppoMaxTitle || utf8.RuneCountInString(n.SubTitle) > oppoMaxSubTitle:
		return OppoBadArg, "title longer than 50 or sub_title longer than 10 characters"
	case utf8.RuneCountInString(n.Content) > oppoMaxLongContent ||
		(utf8.RuneCountInString(n.Content) > oppoMaxContent && (n.Style == nil || *n.Style != 2)):
		return OppoBadArg, "content longer than 50 characters (128 with style 2)"
	case n.Style != nil && (*n.Style < 1 || *n.Style > 3):
		return OppoBadArg, "style must be 1, 2 or 3"
	case n.ClickActionType != nil && *n.ClickActionType != 0 && *n.ClickActionType != 1 && *n.ClickActionType != 2 && *n.ClickActionType != 4 && *n.ClickActionType != 5:
		return OppoBadArg, "click_action_type must be 0, 1, 2, 4 or 5"
	case len(n.ClickActionURL) > oppoMaxURL || len(n.ActionParameters) > oppoMaxParams:
		return OppoBadArg, "click_action_url or action_parameters too long"
	case n.OffLineTTL != nil && (*n.OffLineTTL < 0 || *n.OffLineTTL > oppoMaxTTL):
		return OppoBadArg, "off_line_ttl must be 0 to 10 days"
	case s.cfg.RequireChannel && n.ChannelID == "":
		return OppoMissingArg, "channel_id is required"
	}
	if n.ActionParameters != "" && !json.Valid([]byte(n.ActionParameters)) {
		return OppoBadArg, "action_parameters must be JSON"
	}
	if n.Category != "" || n.NotifyLevel != nil {
		if !oppoCategories[n.Category] || (n.NotifyLevel != nil && *n.NotifyLevel != 1 && *n.NotifyLevel != 2 && *n.NotifyLevel != 16) {
			return OppoBadCategory, "category or notify_level error"
		}
	}
	return 0, ""
}

// oppoRegionCN reports whether a regId belongs to OPPO's China service (gateways.md §7.1).
func oppoRegionCN(regID string) bool {
	parts := strings.Split(regID, "_")
	switch len(parts) {
	case 1:
		return true
	case 2:
		return parts[0] == "CN"
	case 3:
		return parts[1] == "CN"
	}
	return false
}

// target answers one checked message's target: 0 or the code and message that refuse it.
func (s *Oppo) target(m *oppoMessage) (int, string) {
	id := m.TargetValue
	if m.TargetType == 2 && s.cfg.Region != "any" && oppoRegionCN(id) != (s.cfg.Region == "cn") {
		return OppoBadArg, "registration_id of the other region"
	}
	s.mu.Lock()
	code := s.invalid[id]
	s.mu.Unlock()
	switch {
	case code != 0:
	case !validVendorToken(id):
		code = s.cfg.InvalidCode
	case IsDeadToken(id, s.cfg.InvalidTokenRate, s.cfg.Seed):
		code = s.cfg.UnsubscribedCode
	default:
		return 0, ""
	}
	if code == s.cfg.UnsubscribedCode {
		return code, "registration_id unsubscribed"
	}
	return code, "Invalid RegistrationId"
}

// admit applies the QPS limit and the day quota to n targets of app; false when it answered.
func (s *Oppo) admit(w http.ResponseWriter, app string, n int) bool {
	s.mu.Lock()
	a := s.apps[app]
	if s.cfg.TokensPerSecond > 0 && !a.rate.take(s.now(), n) {
		s.mu.Unlock()
		s.reply(w, OppoReply{Code: s.cfg.FlowCode, Message: "Server Flow Control"})
		return false
	}
	if s.cfg.DayQuota > 0 {
		if day := s.now().In(chinaTime).Format(time.DateOnly); a.day != day {
			a.day, a.used = day, 0
		}
		if a.used+int64(n) > s.cfg.DayQuota {
			s.mu.Unlock()
			s.reply(w, OppoReply{Code: OppoDayLimit, Message: "Exceed Daily Message Limit"})
			return false
		}
		a.used += int64(n)
	}
	s.mu.Unlock()
	return true
}

func (s *Oppo) messageID() string {
	return fmt.Sprintf("5c5a1fd5d0ad6b0001%06d", s.seq.Add(1)%1000000)
}

func (s *Oppo) serveUnicast(w http.ResponseWriter, app, raw string) {
	var m oppoMessage
	if raw == "" {
		s.reply(w, OppoReply{Code: OppoMissingArg, Message: "message is empty"})
		return
	}
	if json.Unmarshal([]byte(raw), &m) != nil {
		s.reply(w, OppoReply{Code: OppoBadArg, Message: "message is not JSON"})
		return
	}
	if code, msg := s.check(&m); code != 0 {
		s.reply(w, OppoReply{Code: code, Message: msg})
		return
	}
	if code, msg := s.target(&m); code != 0 {
		s.reply(w, OppoReply{Code: code, Message: msg})
		return
	}
	if !s.admit(w, app, 1) {
		return
	}
	mid := s.messageID()
	writeJSON(w, http.StatusOK, OppoReply{Code: OppoOK, Message: "Success", Data: map[string]string{"messageId": mid}})
	s.receipt(app, []oppoMessage{m}, []string{mid})
	s.rec.acceptedMany([]string{m.TargetValue}, "0", func() Sent {
		return Sent{Target: m.TargetValue, Project: app, Body: json.RawMessage(raw), NotifyID: oppoNotifyID([]byte(raw))}
	})
}

// receipt posts the receipts of the accepted messages ms (message ids mids) that name a
// call_back_url, as OPPO does (its "消息回执" page): a JSON array of events, push_arrive, or
// regid_invalid [unconfirmed] for the share ReceiptUninstalledRate.
func (s *Oppo) receipt(app string, ms []oppoMessage, mids []string) {
	type event struct {
		MessageID       string `json:"messageId"`
		AppID           string `json:"appId"`
		TaskID          string `json:"taskId"`
		RegistrationIDs string `json:"registrationIds"`
		EventTime       string `json:"eventTime"`
		Param           string `json:"param"`
		EventType       string `json:"eventType"`
	}
	byURL := map[string][]event{}
	var order []string
	for i := range ms {
		n := ms[i].Notification
		if n == nil || n.CallBackURL == "" {
			continue
		}
		typ := "push_arrive"
		if ReceiptUninstalled(ms[i].TargetValue, s.cfg.ReceiptUninstalledRate, s.cfg.Seed) {
			typ = "regid_invalid"
		}
		if _, ok := byURL[n.CallBackURL]; !ok {
			order = append(order, n.CallBackURL)
		}
		byURL[n.CallBackURL] = append(byURL[n.CallBackURL], event{MessageID: mids[i], AppID: app, TaskID: mids[i], RegistrationIDs: ms[i].TargetValue,
			EventTime: strconv.FormatInt(s.now().UnixMilli(), 10), Param: n.CallBackParam, EventType: typ})
	}
	for _, u := range order {
		b, _ := json.Marshal(byURL[u])
		s.receipts.post(receiptJob{url: u, contentType: "application/json", body: b})
	}
}

func (s *Oppo) serveBatch(w http.ResponseWriter, app, raw string) {
	var ms []oppoMessage
	if raw == "" {
		s.reply(w, OppoReply{Code: OppoMissingArg, Message: "messages is empty"})
		return
	}
	if json.Unmarshal([]byte(raw), &ms) != nil {
		s.reply(w, OppoReply{Code: OppoBadArg, Message: "messages is not a JSON array"})
		return
	}
	if len(ms) == 0 || len(ms) > oppoMaxTargets {
		s.reply(w, OppoReply{Code: OppoBadArg, Message: "messages must hold 1 to 1000 messages"})
		return
	}
	items := make([]OppoItem, len(ms))
	var good []string
	for i := range ms {
		items[i].RegistrationID = ms[i].TargetValue
		code, msg := s.check(&ms[i])
		if code == 0 {
			code, msg = s.target(&ms[i])
		}
		if code != 0 {
			items[i].ErrorCode, items[i].ErrorMessage = code, msg
			continue
		}
		good = append(good, ms[i].TargetValue)
	}
	if len(good) > 0 && !s.admit(w, app, len(good)) {
		return
	}
	var sent []oppoMessage
	var mids []string
	for i := range items {
		if items[i].ErrorCode == 0 {
			items[i].MessageID = s.messageID()
			sent, mids = append(sent, ms[i]), append(mids, items[i].MessageID)
		}
	}
	writeJSON(w, http.StatusOK, OppoReply{Code: OppoOK, Message: "Success", Data: items})
	s.receipt(app, sent, mids)
	s.rec.acceptedMany(good, "0", func() Sent {
		return Sent{Target: strings.Join(good, ","), Project: app, Body: json.RawMessage(raw), NotifyID: oppoNotifyID([]byte(raw))}
	})
}

// reply writes a non-accepting OPPO answer (HTTP 200) and counts it.
func (s *Oppo) reply(w http.ResponseWriter, r OppoReply) {
	writeJSON(w, http.StatusOK, r)
	s.rec.answer(http.StatusOK, strconv.Itoa(r.Code))
}

// status answers a bare HTTP status.
func (s *Oppo) status(w http.ResponseWriter, status int, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((retryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(status)
	s.rec.answer(status, strconv.Itoa(status))
}
