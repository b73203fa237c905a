package sim

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Meizu (Flyme) push codes (gateways.md §5.3). The reply's code is a string; the per-pushId
// codes are the keys of its value map.
const (
	MzOK            = "200"
	MzOther         = "500"
	MzSystemError   = "1001"
	MzBusy          = "1003"
	MzParamError    = "1005"
	MzSignError     = "1006"
	MzBadAppID      = "110000"
	MzBadAppKey     = "110001"
	MzEmptyParam    = "110004"
	MzBlacklisted   = "110009"
	MzTooFast       = "110010" // top level: the app's request rate; per pushId: the user's switch is off
	MzDayLimit      = "110019"
	MzBadPackage    = "110031"
	MzBadTaskID     = "110032"
	MzBadAppSecret  = "110033"
	MzAppCountLimit = "110051"
	MzPassThrough   = "110053"
	// Per-pushId codes.
	MzUnsubscribed  = "110002"
	MzIllegalPushID = "110003"
	MzAliasOff      = "110005"
	MzPublicCap     = "110011"
	MzNoPermission  = "201"
	MzPushFailed    = "501"
	MzDBError       = "513"
	MzOverload      = "519"
	MzFolded        = "520"

	MzNotificationPath = "/garcia/api/server/push/varnished/pushByPushId"
	MzPassThroughPath  = "/garcia/api/server/push/unvarnished/pushByPushId"
	mzMaxPushIDs       = 100
	mzMaxTitle         = 32
	mzMaxContent       = 100
)

var mzNotifyKey = regexp.MustCompile(`^[0-9a-zA-Z_-]{1,8}$`)

// MzConfig configures a Meizu push simulator (pushByPushId, notification and pass-through).
type MzConfig struct {
	Addr string // listen address; default 127.0.0.1:0
	// TargetsPerSecond > 0 is each app's token bucket of pushIds per second; a request
	// beyond it gets the top-level 110010 ("app request rate too high").
	TargetsPerSecond float64
	// DayQuota > 0 caps the pushIds per app per simulated China day; beyond it the top-level
	// 110019 ("daily push count exceeded").
	DayQuota int64
	// PassThrough allows the unvarnished (pass-through) path; without it that path answers
	// 110053, as Meizu does for apps created after 2018-06-16.
	PassThrough  bool
	Record       int  // keep up to this many accepted requests for Sent()
	NoTokenStats bool // turn off Stats.PerToken
	Now          func() time.Time

	Knobs
}

// Mz is a running Meizu push simulator. Each request is checked as Meizu does: the MD5
// signature of its sorted raw parameters plus the app secret, the appId, the pushIds (at
// most 100) and the messageJson fields; each pushId then gets its own outcome in the
// reply's value map (valid ones are not listed). Notifications go to URL()+MzNotificationPath.
// Stats' ByReason counts the top-level code of each answer and, for accepted requests, every
// per-pushId code of the value map; Sent's Target is the accepted pushIds joined by commas,
// Project the appId, Body the messageJson as received.
type Mz struct {
	cfg      MzConfig
	now      func() time.Time
	endpoint // srv and rec: URL, ClientTLS, CertPEM, Close, Stats, Sent
	faults   *faults
	seq      atomic.Uint64

	mu    sync.Mutex
	apps  map[string]*mzApp // appId → app
	codes map[string]string // pushId → per-pushId code (110002, 110010, 501, ...)
	rates map[string]*tokenBucket
}

type mzApp struct {
	secret string
	day    string
	used   int64
}

// NewMz starts a Meizu simulator serving HTTP/2 and HTTP/1.1 over TLS.
func NewMz(cfg MzConfig) (*Mz, error) {
	if cfg.ErrorRate < 0 || cfg.ErrorRate > 1 || cfg.InvalidTokenRate < 0 || cfg.InvalidTokenRate > 1 ||
		cfg.DayQuota < 0 || cfg.TargetsPerSecond < 0 || cfg.Record < 0 {
		return nil, errors.New("invalid Meizu simulator config: rates within [0, 1], nothing negative")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Mz{cfg: cfg, now: cfg.Now, faults: newFaults(cfg.Knobs), endpoint: endpoint{rec: newRecorder(cfg.NoTokenStats, cfg.Record, &outage{now: cfg.Now})},
		apps: map[string]*mzApp{}, codes: map[string]string{}, rates: map[string]*tokenBucket{}}
	srv, err := startServer(serverOptions{addr: cfg.Addr, handler: s, http1: true, maxStreams: 1000})
	if err != nil {
		return nil, fmt.Errorf("cannot start Meizu simulator: %w", err)
	}
	s.srv = srv
	s.receipts = newReceiptPoster(s.rec)
	return s, nil
}

// Reset zeroes counters, recorded requests and day quotas.
func (s *Mz) Reset() {
	s.rec.reset()
	s.mu.Lock()
	for _, a := range s.apps {
		a.used = 0
	}
	s.mu.Unlock()
}

// StartOutage makes every send request, from now on, get the answer of each phase in turn
// (for its duration), replacing any outage in force; see Outage. In status mode Reason is a
// Meizu code answered with HTTP 200 (e.g. "1003"); without one the bare HTTP status.
func (s *Mz) StartOutage(phases ...Outage) error { return s.rec.outage.begin(phases) }

// EndOutage ends the outage in force, if any.
func (s *Mz) EndOutage() { s.rec.outage.end() }

// AddApp trusts appID with secret.
func (s *Mz) AddApp(appID, secret string) {
	s.mu.Lock()
	s.apps[appID] = &mzApp{secret: secret}
	s.mu.Unlock()
}

// NewApp makes and trusts an app with a random numeric appId and secret.
func (s *Mz) NewApp() (appID, secret string) {
	n, _ := rand.Int(rand.Reader, big.NewInt(900000))
	var b [16]byte
	_, _ = rand.Read(b[:])
	appID, secret = strconv.FormatInt(100000+n.Int64(), 10), hex.EncodeToString(b[:])
	s.AddApp(appID, secret)
	return appID, secret
}

// SetPushIDCode makes every later request answer code for pushID in its value map:
// MzUnsubscribed (110002), MzTooFast (110010, switched off), MzPublicCap, MzNoPermission,
// MzPushFailed, MzDBError, MzOverload, MzFolded; "" makes it valid again.
func (s *Mz) SetPushIDCode(pushID, code string) {
	s.mu.Lock()
	if code == "" {
		delete(s.codes, pushID)
	} else {
		s.codes[pushID] = code
	}
	s.mu.Unlock()
}

// MarkInvalid makes pushID unsubscribed (110002), the dead-token answer.
func (s *Mz) MarkInvalid(pushID string) { s.SetPushIDCode(pushID, MzUnsubscribed) }

// Inject scripts the answer to the next n send requests: Reason is a top-level Meizu code
// (HTTP 200); an empty Reason answers the bare HTTP Status.
func (s *Mz) Inject(n int, f Fault) { s.faults.inject(n, f) }

// mzReply is Meizu's answer: code a string, value the failed pushIds by code.
type mzReply struct {
	Code     string              `json:"code"`
	Message  string              `json:"message"`
	Value    map[string][]string `json:"value"`
	MsgID    string              `json:"msgId"`
	Redirect string              `json:"redirect"`
}

func (s *Mz) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_") && s.rec.serveControl(w, r, s.Reset, s.faults) {
		return
	}
	passThrough := r.URL.Path == MzPassThroughPath
	if (r.URL.Path != MzNotificationPath && !passThrough) || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusNotFound)
		s.rec.answer(http.StatusNotFound, "404")
		return
	}
	answer := func(f Fault) { s.fault(w, f) }
	if s.intercept(w, r, s.faults, s.now(), Fault{Status: http.StatusServiceUnavailable}, answer, answer) {
		return
	}
	body, tooLarge, err := readSmall(r.Body, 1<<20)
	if err != nil {
		return
	}
	form, err := url.ParseQuery(string(body))
	if tooLarge || err != nil || !strings.HasPrefix(headerValue(r.Header, "Content-Type"), "application/x-www-form-urlencoded") {
		s.fail(w, MzParamError, "参数错误: form body expected")
		return
	}
	appID := form.Get("appId")
	if appID == "" || form.Get("sign") == "" || form.Get("pushIds") == "" || form.Get("messageJson") == "" {
		s.fail(w, MzEmptyParam, "参数为空: appId, pushIds, messageJson and sign are required")
		return
	}
	s.mu.Lock()
	app := s.apps[appID]
	s.mu.Unlock()
	if app == nil {
		s.fail(w, MzBadAppID, "appId不合法")
		return
	}
	if form.Get("sign") != MzSign(form, app.secret) {
		s.fail(w, MzSignError, "签名不正确")
		return
	}
	if passThrough && !s.cfg.PassThrough {
		s.fail(w, MzPassThrough, "透传消息超过限制")
		return
	}
	ids := strings.Split(form.Get("pushIds"), ",")
	if len(ids) > mzMaxPushIDs {
		s.fail(w, MzParamError, "参数错误: at most 100 pushIds")
		return
	}
	if msg := mzValidate(form.Get("messageJson"), passThrough); msg != "" {
		s.fail(w, MzParamError, "参数错误: "+msg)
		return
	}
	if s.cfg.TargetsPerSecond > 0 {
		s.mu.Lock()
		b := s.rates[appID]
		if b == nil {
			b = &tokenBucket{rate: s.cfg.TargetsPerSecond}
			s.rates[appID] = b
		}
		s.mu.Unlock()
		if !b.take(s.now(), len(ids)) {
			s.fail(w, MzTooFast, "应用请求频率超过限制")
			return
		}
	}
	value := map[string][]string{}
	var good []string
	s.mu.Lock()
	if s.cfg.DayQuota > 0 {
		day := s.now().In(chinaTime).Format(time.DateOnly) // Meizu's quota day [unconfirmed]
		if app.day != day {
			app.day, app.used = day, 0
		}
		if app.used+int64(len(ids)) > s.cfg.DayQuota {
			s.mu.Unlock()
			s.fail(w, MzDayLimit, "超过当天推送数限制")
			return
		}
		app.used += int64(len(ids))
	}
	for _, id := range ids {
		code := s.codes[id]
		switch {
		case !validVendorToken(id):
			code = MzIllegalPushID
		case code == "" && IsDeadToken(id, s.cfg.InvalidTokenRate, s.cfg.Seed):
			code = MzUnsubscribed
		}
		if code == "" {
			good = append(good, id)
		} else {
			value[code] = append(value[code], id)
		}
	}
	s.mu.Unlock()
	msgID := fmt.Sprintf("NS%013d%06d", s.now().UnixMilli(), s.seq.Add(1)%1000000)
	writeJSON(w, http.StatusOK, mzReply{Code: MzOK, Value: value, MsgID: msgID})
	s.receipt(form.Get("messageJson"), msgID, good)
	s.rec.acceptedMany(good, MzOK, func() Sent {
		return Sent{Target: strings.Join(good, ","), Project: appID, Body: json.RawMessage(form.Get("messageJson")), NotifyID: mzNotifyID([]byte(form.Get("messageJson")))}
	})
	if len(value) > 0 {
		s.rec.mu.Lock()
		for code, ids := range value {
			s.rec.st.ByReason[code] += int64(len(ids))
		}
		s.rec.mu.Unlock()
	}
}

// MzSign is Meizu's request signature (gateways.md §5.1): every parameter but sign, sorted
// by name, as name=value with the raw (not URL-encoded) value, concatenated without a
// separator, the app secret appended, MD5 in lower-case hex.
func MzSign(form url.Values, secret string) string {
	names := make([]string, 0, len(form))
	for k := range form {
		if k != "sign" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	h := md5.New()
	for _, k := range names {
		_, _ = h.Write([]byte(k + "=" + form.Get(k)))
	}
	_, _ = h.Write([]byte(secret))
	return hex.EncodeToString(h.Sum(nil))
}

// receipt posts the receipt of an accepted message whose extra names a callback with type 1
// or 3 (delivered): form field cb = {"<msgId>": {"param", "type", "targets"}} [format
// unconfirmed]. Arrivals only: Meizu answers dead pushIds in the send reply. The tokens of the
// ReceiptUninstalledRate share get none.
func (s *Mz) receipt(mj, msgID string, good []string) {
	var m mzMessage
	if json.Unmarshal([]byte(mj), &m) != nil || m.Extra["callback"] == "" {
		return
	}
	if t := m.Extra["callback.type"]; t != "" && t != "1" && t != "3" {
		return
	}
	var targets []string
	for _, id := range good {
		if !ReceiptUninstalled(id, s.cfg.ReceiptUninstalledRate, s.cfg.Seed) {
			targets = append(targets, id)
		}
	}
	if len(targets) == 0 {
		return
	}
	b, _ := json.Marshal(map[string]any{msgID: map[string]any{"param": m.Extra["callback.param"], "type": 1, "targets": targets}})
	s.receipts.post(receiptJob{url: m.Extra["callback"], contentType: "application/x-www-form-urlencoded", body: []byte(url.Values{"cb": {string(b)}}.Encode())})
}

// mzMessage is what the simulator checks of messageJson.
type mzMessage struct {
	NoticeBarInfo *struct {
		NoticeMsgType *int   `json:"noticeMsgType"`
		NoticeBarType *int   `json:"noticeBarType"`
		Title         string `json:"title"`
		Content       string `json:"content"`
	} `json:"noticeBarInfo"`
	ClickTypeInfo *struct {
		ClickType  *int            `json:"clickType"`
		URL        string          `json:"url"`
		Activity   string          `json:"activity"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"clickTypeInfo"`
	PushTimeInfo *struct {
		OffLine   *int `json:"offLine"`
		ValidTime *int `json:"validTime"`
	} `json:"pushTimeInfo"`
	AdvanceInfo *struct {
		NotifyKey string `json:"notifyKey"`
	} `json:"advanceInfo"`
	Extra map[string]string `json:"extra"`
	// Pass-through (unvarnished) messages.
	Title   string `json:"title"`
	Content string `json:"content"`
}

// mzValidate checks messageJson (gateways.md §5.2); "" when it is fine.
func mzValidate(raw string, passThrough bool) string {
	var m mzMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return "messageJson is not a JSON object"
	}
	if passThrough {
		if m.Content == "" {
			return "content is required"
		}
	} else {
		n := m.NoticeBarInfo
		if n == nil {
			return "noticeBarInfo is required"
		}
		if t := utf8.RuneCountInString(n.Title); t < 1 || t > mzMaxTitle || strings.TrimSpace(n.Title) == "" {
			return "title must be 1 to 32 characters"
		}
		if c := utf8.RuneCountInString(n.Content); c < 1 || c > mzMaxContent || strings.TrimSpace(n.Content) == "" {
			return "content must be 1 to 100 characters"
		}
		if n.NoticeMsgType != nil && *n.NoticeMsgType != 0 && *n.NoticeMsgType != 1 {
			return "noticeMsgType must be 0 or 1"
		}
		if c := m.ClickTypeInfo; c != nil && c.ClickType != nil {
			switch *c.ClickType {
			case 0:
			case 1:
				if c.Activity == "" {
					return "clickType 1 needs an activity"
				}
			case 2:
				if c.URL == "" {
					return "clickType 2 needs a url"
				}
			default:
				return "clickType must be 0, 1 or 2"
			}
			if len(c.Parameters) > 0 && c.Parameters[0] != '{' && string(c.Parameters) != "null" {
				return "parameters must be an object"
			}
		}
		if a := m.AdvanceInfo; a != nil && a.NotifyKey != "" && !mzNotifyKey.MatchString(a.NotifyKey) {
			return "notifyKey must be at most 8 of [0-9a-zA-Z_-]"
		}
	}
	if p := m.PushTimeInfo; p != nil {
		if p.OffLine != nil && *p.OffLine != 0 && *p.OffLine != 1 {
			return "offLine must be 0 or 1"
		}
		if p.ValidTime != nil && (*p.ValidTime < 1 || *p.ValidTime > 72) {
			return "validTime must be 1 to 72 hours"
		}
	}
	if len(m.Extra["callback"]) > 128 || len(m.Extra["callback.param"]) > 64 {
		return "callback at most 128 bytes, callback.param at most 64"
	}
	if t, ok := m.Extra["callback.type"]; ok && t != "1" && t != "2" && t != "3" {
		return "callback.type must be 1, 2 or 3"
	}
	return ""
}

// fault answers a scripted or outage fault: a Meizu code with HTTP 200, or a bare status.
func (s *Mz) fault(w http.ResponseWriter, f Fault) {
	if f.Reason != "" {
		s.fail(w, f.Reason, "injected fault")
		return
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(f.Status)
	s.rec.answer(f.Status, strconv.Itoa(f.Status))
}

func (s *Mz) fail(w http.ResponseWriter, code, message string) {
	writeJSON(w, http.StatusOK, mzReply{Code: code, Message: message, Value: map[string][]string{}})
	s.rec.answer(http.StatusOK, code)
}
