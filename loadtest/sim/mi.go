package sim

import (
	"crypto/rand"
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

// Xiaomi codes: 0 and 21301 are confirmed (gateways.md §4.3); the rest of Xiaomi's table is
// not, so the simulator's parameter and quota codes are configurable.
const (
	MiOK            = 0
	MiInvalidSecret = 21301
	// MiDefaultParamCode and MiDefaultQuotaCode are this simulator's defaults [unconfirmed].
	MiDefaultParamCode = 10017
	MiDefaultQuotaCode = 200001
	miMaxRegIDs        = 1000
	miMaxPayload       = 4096
)

// MiConfig configures a Xiaomi push simulator (/v3/message/regid and /v2/message/regid).
type MiConfig struct {
	Addr string // listen address; default 127.0.0.1:0
	// DayQuota > 0 caps the accepted targets per app per simulated China day; beyond it the
	// answer is QuotaCode with data.day_quota.
	DayQuota int64
	// TargetsPerSecond > 0 is each app's token bucket of regIds per second; a request beyond
	// it answers HTTP 503 with Retry-After 1 (Xiaomi's flow-control answer is unconfirmed).
	TargetsPerSecond float64
	ParamCode        int // code of request validation errors (default MiDefaultParamCode)
	QuotaCode        int // code of an exhausted day quota (default MiDefaultQuotaCode)
	Record           int
	// ReceiptBody encodes the receipts posted to a request's extra.callback (delivered
	// regIds, and with callback.type 16 the invalid ones); nil: DefaultMiReceiptBody.
	ReceiptBody MiReceiptBody
	// NoTokenStats turns off Stats.PerToken.
	NoTokenStats bool
	Now          func() time.Time

	Knobs
}

// Mi is a running Xiaomi push simulator. Sends go to URL()+"/v3/message/regid".
type Mi struct {
	cfg      MiConfig
	now      func() time.Time
	endpoint // srv and rec: URL, ClientTLS, CertPEM, Close, Stats, Sent
	faults   *faults
	seq      atomic.Uint64
	receipts *miReceipts

	mu      sync.Mutex
	apps    map[string]*miApp // secret → app
	invalid map[string]bool
}

type miApp struct {
	packages map[string]bool
	day      string
	used     int64
	rate     *tokenBucket
}

// NewMi starts a Xiaomi simulator serving HTTP/2 and HTTP/1.1 over TLS.
func NewMi(cfg MiConfig) (*Mi, error) {
	if cfg.ErrorRate < 0 || cfg.ErrorRate > 1 || cfg.InvalidTokenRate < 0 || cfg.InvalidTokenRate > 1 || cfg.DayQuota < 0 || cfg.TargetsPerSecond < 0 || cfg.Record < 0 {
		return nil, errors.New("invalid Mi simulator config: rates within [0, 1], nothing negative")
	}
	if cfg.ParamCode == 0 {
		cfg.ParamCode = MiDefaultParamCode
	}
	if cfg.QuotaCode == 0 {
		cfg.QuotaCode = MiDefaultQuotaCode
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Mi{cfg: cfg, now: cfg.Now, faults: newFaults(cfg.Knobs), endpoint: endpoint{rec: newRecorder(cfg.NoTokenStats, cfg.Record, &outage{now: cfg.Now})},
		apps: map[string]*miApp{}, invalid: map[string]bool{}}
	srv, err := startServer(serverOptions{addr: cfg.Addr, handler: s, http1: true, maxStreams: 1000})
	if err != nil {
		return nil, fmt.Errorf("cannot start Mi simulator: %w", err)
	}
	s.srv = srv
	s.receipts = newMiReceipts(cfg.ReceiptBody, s.rec)
	return s, nil
}

// Close stops serving, drops open connections and stops posting receipts.
func (s *Mi) Close() error {
	err := s.endpoint.Close()
	s.receipts.close()
	return err
}

// Reset zeroes counters, recorded requests and day quotas.
func (s *Mi) Reset() {
	s.rec.reset()
	s.mu.Lock()
	for _, a := range s.apps {
		a.used = 0
	}
	s.mu.Unlock()
}

// NewApp makes and trusts an app secret for the given package names.
func (s *Mi) NewApp(packages ...string) (secret string) {
	var b [18]byte
	_, _ = rand.Read(b[:])
	secret = hex.EncodeToString(b[:]) + "=="
	a := &miApp{packages: map[string]bool{}, rate: &tokenBucket{rate: s.cfg.TargetsPerSecond}}
	for _, p := range packages {
		a.packages[p] = true
	}
	s.mu.Lock()
	s.apps[secret] = a
	s.mu.Unlock()
	return secret
}

// MarkInvalid makes a regId invalid: Xiaomi accepts it silently and never delivers it.
func (s *Mi) MarkInvalid(regID string) {
	s.mu.Lock()
	s.invalid[regID] = true
	s.mu.Unlock()
}

// Inject scripts the answer to the next n send requests: Reason is a Xiaomi code (HTTP 200,
// result "error"); an empty Reason answers the bare HTTP Status.
func (s *Mi) Inject(n int, f Fault) { s.faults.inject(n, f) }

type miReply struct {
	Result      string         `json:"result"`
	Code        int            `json:"code"`
	TraceID     string         `json:"trace_id"`
	Data        map[string]any `json:"data,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	Description string         `json:"description,omitempty"`
	Info        string         `json:"info,omitempty"`
}

func (s *Mi) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_") && s.rec.serveControl(w, r, s.Reset, s.faults) {
		return
	}
	if (r.URL.Path != "/v3/message/regid" && r.URL.Path != "/v2/message/regid") || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusNotFound)
		s.rec.answer(http.StatusNotFound, "404")
		return
	}
	// In status mode a phase's Reason is a Xiaomi code (HTTP 200); a bare status otherwise.
	answer := func(f Fault) { s.fault(w, f) }
	if s.intercept(w, r, s.faults, s.now(), Fault{Status: http.StatusServiceUnavailable}, answer, answer) {
		return
	}
	secret, ok := strings.CutPrefix(headerValue(r.Header, "Authorization"), "key=")
	s.mu.Lock()
	app := s.apps[secret]
	s.mu.Unlock()
	if !ok || app == nil {
		s.fail(w, MiInvalidSecret, "Invalid application secret.")
		return
	}
	body, tooLarge, err := readSmall(r.Body, 1<<20)
	if err != nil {
		return
	}
	form, err := url.ParseQuery(string(body))
	if tooLarge || err != nil || !strings.HasPrefix(headerValue(r.Header, "Content-Type"), "application/x-www-form-urlencoded") {
		s.fail(w, s.cfg.ParamCode, "Invalid form body.")
		return
	}
	pkgs := form.Get("restricted_package_name")
	for _, p := range strings.Split(pkgs, ",") {
		if !app.packages[p] {
			s.fail(w, s.cfg.ParamCode, "restricted_package_name does not belong to this app.")
			return
		}
	}
	ids := strings.Split(form.Get("registration_id"), ",")
	if form.Get("registration_id") == "" || len(ids) > miMaxRegIDs {
		s.fail(w, s.cfg.ParamCode, "registration_id must hold 1 to 1000 regIds.")
		return
	}
	if msg := s.validate(form); msg != "" {
		s.fail(w, s.cfg.ParamCode, msg)
		return
	}
	if s.cfg.TargetsPerSecond > 0 && !app.rate.take(s.now(), len(ids)) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		s.rec.answer(http.StatusServiceUnavailable, "503")
		return
	}
	var good, bad []string
	s.mu.Lock()
	for _, id := range ids {
		if validVendorToken(id) && !s.invalid[id] && !IsDeadToken(id, s.cfg.InvalidTokenRate, s.cfg.Seed) {
			good = append(good, id)
		} else {
			bad = append(bad, id)
		}
	}
	quotaLeft := int64(-1)
	if s.cfg.DayQuota > 0 {
		day := s.now().In(chinaTime).Format(time.DateOnly) // Xiaomi's quota day [unconfirmed]
		if app.day != day {
			app.day, app.used = day, 0
		}
		if app.used+int64(len(ids)) > s.cfg.DayQuota {
			s.mu.Unlock()
			s.failData(w, s.cfg.QuotaCode, "Daily quota exceeded.", map[string]any{"day_quota": strconv.FormatInt(s.cfg.DayQuota, 10)})
			return
		}
		app.used += int64(len(ids))
		quotaLeft = s.cfg.DayQuota - app.used
	}
	s.mu.Unlock()
	id := fmt.Sprintf("scm%013d%06d", s.now().UnixMilli(), s.seq.Add(1)%1000000)
	data := map[string]any{"id": id}
	if quotaLeft >= 0 {
		data["day_quota"] = strconv.FormatInt(s.cfg.DayQuota, 10)
		data["day_acked"] = strconv.FormatInt(s.cfg.DayQuota-quotaLeft, 10)
	}
	writeJSON(w, http.StatusOK, miReply{Result: "ok", Code: MiOK, TraceID: s.trace(), Data: data, Description: "成功",
		Info: "Received push messages for " + strconv.Itoa(len(ids)) + " REGID"})
	s.rec.acceptedMany(good, "0", func() Sent {
		return Sent{Target: strings.Join(good, ","), Project: pkgs, Body: append(json.RawMessage(nil), body...), NotifyID: miNotifyID(body)}
	})
	// The ReceiptUninstalledRate share of the accepted regIds comes back as invalid (type 16).
	arrived, invalid := good, bad
	if s.cfg.ReceiptUninstalledRate > 0 {
		arrived, invalid = nil, append([]string(nil), bad...)
		for _, t := range good {
			if ReceiptUninstalled(t, s.cfg.ReceiptUninstalledRate, s.cfg.Seed) {
				invalid = append(invalid, t)
			} else {
				arrived = append(arrived, t)
			}
		}
	}
	s.receipts.add(form, id, arrived, invalid, s.now())
}

// validate checks the message fields (gateways.md §4.2); "" when they are fine.
func (s *Mi) validate(f url.Values) string {
	switch f.Get("pass_through") {
	case "", "0":
		title, desc := f.Get("title"), f.Get("description")
		if strings.TrimSpace(title) == "" || utf8.RuneCountInString(title) >= 50 {
			return "title must be 1 to 49 characters, not blank."
		}
		if strings.TrimSpace(desc) == "" || utf8.RuneCountInString(desc) >= 128 {
			return "description must be 1 to 127 characters."
		}
	case "1":
		if f.Get("payload") == "" {
			return "payload is required for pass-through messages."
		}
	default:
		return "pass_through must be 0 or 1."
	}
	if len(f.Get("payload")) >= miMaxPayload {
		return "payload must be under 4 KB."
	}
	if v := f.Get("time_to_live"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || n > 14*24*3600*1000 {
			return "time_to_live must be 0 to 2 weeks in milliseconds."
		}
	}
	if v := f.Get("notify_id"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || n > 2147483647 {
			return "notify_id out of range."
		}
	}
	custom := 0
	for k := range f {
		if name, ok := strings.CutPrefix(k, "extra."); ok {
			switch name {
			case "notify_effect", "channel_id", "channel_name", "notify_foreground", "sound_uri", "ticker", "jobkey",
				"only_send_once", "flow_control", "callback", "callback.param", "callback.type", "locale", "model", "app_version", "connpt", "intent_uri", "web_uri":
			default:
				custom++
			}
			if len(f.Get(k)) > 1024 {
				return "extra values must be at most 1024 characters."
			}
			switch v := f.Get(k); {
			case name == "callback" && (len(v) > 128 || !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://")):
				return "extra.callback must be an http(s) URL of at most 128 bytes."
			case name == "callback.param" && len(v) > 64:
				return "extra.callback.param must be at most 64 bytes."
			case name == "callback.type" && !miCallbackType(v):
				return "extra.callback.type must be 1, 2, 3 or 16 (or their sum)."
			}
		}
	}
	if custom > 10 {
		return "at most 10 custom extra pairs."
	}
	return ""
}

// StartOutage makes every send request get the answer of each phase in turn; see Outage.
func (s *Mi) StartOutage(phases ...Outage) error { return s.rec.outage.begin(phases) }

// EndOutage ends the outage in force, if any.
func (s *Mi) EndOutage() { s.rec.outage.end() }

// fault answers a scripted or outage fault: a Xiaomi code (HTTP 200; the quota code with
// data.day_quota, as a spent quota answers), or a bare status with its Retry-After.
func (s *Mi) fault(w http.ResponseWriter, f Fault) {
	code, err := strconv.Atoi(f.Reason)
	switch {
	case err == nil && code == s.cfg.QuotaCode:
		s.failData(w, code, "Daily quota exceeded.", map[string]any{"day_quota": strconv.FormatInt(s.cfg.DayQuota, 10)})
	case err == nil:
		s.fail(w, code, "injected fault")
	default:
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
		}
		w.WriteHeader(f.Status)
		s.rec.answer(f.Status, strconv.Itoa(f.Status))
	}
}

// miCallbackType accepts 1, 2, 3, 16 and their combinations.
func miCallbackType(v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && n > 0 && n&^(1|2|16) == 0
}

func (s *Mi) trace() string { return fmt.Sprintf("Xcm%013d", s.seq.Add(1)) }

func (s *Mi) fail(w http.ResponseWriter, code int, reason string) { s.failData(w, code, reason, nil) }

func (s *Mi) failData(w http.ResponseWriter, code int, reason string, data map[string]any) {
	writeJSON(w, http.StatusOK, miReply{Result: "error", Code: code, TraceID: s.trace(), Reason: reason, Data: data})
	s.rec.answer(http.StatusOK, strconv.Itoa(code))
}
