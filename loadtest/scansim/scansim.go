// Package scansim simulates the original service's scan endpoint for _Installation, so that
// `pushd import --from` is tested without a network: GET /1.1/scan/classes/_Installation
// (pages of {results, cursor} in objectId order, limit 100 by default and at most 1000, an
// optional where on updatedAt, a cursor that expires) and GET /1.1/classes/_Installation with
// count=1. It can answer 429 with Retry-After and cut a reply's connection mid-body.
//
// Rows are generated from their index, so a test knows every row without storing them: Row(i).
// Every exported method is safe for concurrent use, also while requests are served.
package scansim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Page limits of the original's scan endpoint (its REST guide: 100 by default, up to 1000).
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Config of a simulator. Zero values take the defaults noted.
type Config struct {
	AppID, MasterKey string
	Rows             int // installations served
	// BadEvery makes every BadEvery-th row (i+1 divisible by it) invalid: an iOS row whose
	// deviceToken is not hex. 0: none.
	BadEvery int
	// Throttle makes every Throttle-th request a 429 with Retry-After: 1. 0: never.
	Throttle int
	// CutAt lists request numbers (1-based) whose reply is cut after half its body.
	CutAt []int
	// CursorTTL is how long a cursor stays valid; default 10 minutes, as the original's.
	CursorTTL time.Duration
	// Base is row 0's createdAt and updatedAt; row i is Base + i seconds. Default 2024-01-01.
	Base time.Time
	Now  func() time.Time // default time.Now
}

// Server is a running simulator.
type Server struct {
	cfg Config
	ln  net.Listener
	srv *http.Server

	requests atomic.Int64
	throttle atomic.Int64
	cuts     atomic.Int64
	maxLimit atomic.Int64

	mu      sync.Mutex
	touched map[int]time.Time // rows updated since Base + i
}

// Start listens on addr ("127.0.0.1:0" for any port) and serves until Close.
func Start(addr string, cfg Config) (*Server, error) {
	if cfg.CursorTTL <= 0 {
		cfg.CursorTTL = 10 * time.Minute
	}
	if cfg.Base.IsZero() {
		cfg.Base = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	s := &Server{cfg: cfg, ln: ln, touched: map[int]time.Time{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /1.1/scan/classes/_Installation", s.scan)
	mux.HandleFunc("GET /1.1/classes/_Installation", s.count)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the simulator's base URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops serving.
func (s *Server) Close() error { return s.srv.Close() }

// Stats are what the simulator saw.
type Stats struct {
	Requests, Throttled, Cuts int64
	MaxLimit                  int64 // largest page served
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	return Stats{Requests: s.requests.Load(), Throttled: s.throttle.Load(), Cuts: s.cuts.Load(), MaxLimit: s.maxLimit.Load()}
}

// Touch updates row i at t (its appVersion becomes "2.0"), as a phone opening the app would.
func (s *Server) Touch(i int, t time.Time) {
	s.mu.Lock()
	s.touched[i] = t
	s.mu.Unlock()
}

// Valid reports whether row i passes pushd's validation.
func (c *Config) Valid(i int) bool { return c.BadEvery <= 0 || (i+1)%c.BadEvery != 0 }

// ObjectID is row i's objectId: 24 hex digits in index order, as the original's ids sort.
func ObjectID(i int) string { return fmt.Sprintf("%024x", i+1) }

// Row is row i as the original's REST API shows it.
func (s *Server) Row(i int) map[string]any {
	s.mu.Lock()
	t, touched := s.touched[i]
	s.mu.Unlock()
	return RowAt(&s.cfg, i, t, touched)
}

// RowAt builds row i; touched rows carry updatedAt t and appVersion "2.0".
func RowAt(c *Config, i int, t time.Time, touched bool) map[string]any {
	base := c.Base
	if base.IsZero() {
		base = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	created := base.Add(time.Duration(i) * time.Second)
	updated := created
	version := "1.2.3"
	if touched {
		updated, version = t, "2.0"
	}
	row := map[string]any{
		"objectId":  ObjectID(i),
		"createdAt": iso(created),
		"updatedAt": iso(updated),
		"channels":  []any{"all", "c" + strconv.Itoa(i%10)},
		"timeZone":  "Asia/Shanghai",
		"badge":     float64(i % 5),
		// Custom fields as the original returns them: a Date, a Pointer, an ACL.
		"appVersion": version,
		"lastSeen":   map[string]any{"__type": "Date", "iso": iso(updated)},
		"owner":      map[string]any{"__type": "Pointer", "className": "_User", "objectId": fmt.Sprintf("u%023x", i)},
		"ACL":        map[string]any{"*": map[string]any{"read": true, "write": true}},
	}
	switch {
	case !c.Valid(i):
		row["deviceType"], row["deviceToken"] = "ios", "not-a-hex-token"
	case i%2 == 0:
		row["deviceType"], row["deviceToken"] = "ios", fmt.Sprintf("%064x", i+1)
		row["apnsTopic"] = "com.example.app"
	default:
		row["deviceType"], row["installationId"] = "android", fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		row["vendor"] = "fcm"
		row["registrationId"] = fmt.Sprintf("reg-%d", i)
	}
	return row
}

func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func writeErr(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "error": msg})
}

// admit checks the master key and counts the request; false means it was answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (n int64, ok bool) {
	n = s.requests.Add(1)
	if r.Header.Get("X-LC-Id") != s.cfg.AppID || r.Header.Get("X-LC-Key") != s.cfg.MasterKey+",master" {
		writeErr(w, http.StatusUnauthorized, 401, "Unauthorized.")
		return n, false
	}
	if s.cfg.Throttle > 0 && n%int64(s.cfg.Throttle) == 0 {
		s.throttle.Add(1)
		w.Header().Set("Retry-After", "1")
		writeErr(w, http.StatusTooManyRequests, 429, "Too many requests.")
		return n, false
	}
	return n, true
}

// since parses the one where the simulator knows: {"updatedAt":{"$gt":{"__type":"Date","iso":...}}}.
func since(where string) (time.Time, bool, error) {
	if where == "" {
		return time.Time{}, false, nil
	}
	var w struct {
		UpdatedAt struct {
			GT struct {
				Type string `json:"__type"`
				ISO  string `json:"iso"`
			} `json:"$gt"`
		} `json:"updatedAt"`
	}
	if err := json.Unmarshal([]byte(where), &w); err != nil || w.UpdatedAt.GT.Type != "Date" {
		return time.Time{}, false, errors.New("unsupported where")
	}
	t, err := time.Parse(time.RFC3339Nano, w.UpdatedAt.GT.ISO)
	return t, err == nil, err
}

func (s *Server) matches(i int, after time.Time, filtered bool) bool {
	if !filtered {
		return true
	}
	u, _ := time.Parse(time.RFC3339Nano, s.Row(i)["updatedAt"].(string))
	return u.After(after)
}

func (s *Server) scan(w http.ResponseWriter, r *http.Request) {
	n, ok := s.admit(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit := DefaultLimit
	if v := q.Get("limit"); v != "" {
		l, err := strconv.Atoi(v)
		if err != nil || l < 1 {
			writeErr(w, http.StatusBadRequest, 1, "invalid limit")
			return
		}
		limit = min(l, MaxLimit)
	}
	after, filtered, err := since(q.Get("where"))
	if err != nil {
		writeErr(w, http.StatusBadRequest, 1, "invalid where")
		return
	}
	start := 0
	if c := q.Get("cursor"); c != "" {
		next, issued, err := decodeCursor(c)
		if err != nil || s.cfg.Now().Sub(issued) > s.cfg.CursorTTL {
			writeErr(w, http.StatusBadRequest, 1, "invalid or expired cursor")
			return
		}
		start = next
	}
	results := make([]map[string]any, 0, limit)
	i := start
	for ; i < s.cfg.Rows && len(results) < limit; i++ {
		if s.matches(i, after, filtered) {
			results = append(results, s.Row(i))
		}
	}
	for int64(len(results)) > s.maxLimit.Load() {
		old := s.maxLimit.Load()
		if s.maxLimit.CompareAndSwap(old, int64(len(results))) {
			break
		}
	}
	var cursor *string
	if i < s.cfg.Rows {
		c := encodeCursor(i, s.cfg.Now())
		cursor = &c
	}
	body, _ := json.Marshal(map[string]any{"results": results, "cursor": cursor})
	for _, cut := range s.cfg.CutAt {
		if int64(cut) == n {
			s.cut(w, body)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// cut sends the headers and half the body, then closes the connection.
func (s *Server) cut(w http.ResponseWriter, body []byte) {
	s.cuts.Add(1)
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic("BUG: the simulator's connections can be hijacked: " + err.Error())
	}
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	_, _ = buf.Write(body[:len(body)/2])
	_ = buf.Flush()
	_ = conn.Close()
}

func (s *Server) count(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.admit(w, r); !ok {
		return
	}
	q := r.URL.Query()
	if q.Get("count") != "1" || q.Get("limit") != "0" {
		writeErr(w, http.StatusBadRequest, 1, "the simulator answers only count=1&limit=0")
		return
	}
	after, filtered, err := since(q.Get("where"))
	if err != nil {
		writeErr(w, http.StatusBadRequest, 1, "invalid where")
		return
	}
	n := s.cfg.Rows
	if filtered {
		n = 0
		for i := 0; i < s.cfg.Rows; i++ {
			if s.matches(i, after, true) {
				n++
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"results": []any{}, "count": n})
}

func encodeCursor(next int, issued time.Time) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(next) + ":" + strconv.FormatInt(issued.UnixNano(), 10)))
}

func decodeCursor(c string) (int, time.Time, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, time.Time{}, err
	}
	a, t, ok := strings.Cut(string(b), ":")
	next, err1 := strconv.Atoi(a)
	ns, err2 := strconv.ParseInt(t, 10, 64)
	if !ok || err1 != nil || err2 != nil || next < 0 {
		return 0, time.Time{}, errors.New("bad cursor")
	}
	return next, time.Unix(0, ns), nil
}
