package api

import (
	"bufio"
	"context"
	"fmt"
	"github.com/pushd/pushd/api/apitest"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store/pebble"
)

// testEnv is a real server on fasthttp's in-memory listener over a real Pebble store.
type testEnv struct {
	t      *testing.T
	srv    *Server
	st     *pebble.Store
	client *fasthttp.Client
	app    push.App
	now    time.Time
	set    *metrics.Set
	ln     *fasthttputil.InmemoryListener
}

type envOpt func(*Config, *Deps)

func newEnv(t *testing.T, opts ...envOpt) *testEnv {
	t.Helper()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, st: st, now: time.Date(2026, 3, 4, 5, 6, 7, 891_000_000, time.UTC), set: metrics.NewSet()}
	cfg := Config{AdminToken: "admin-token-0123456789"}
	deps := Deps{Apps: st, Installations: st, Metrics: e.set, Now: func() time.Time { return e.now }}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	srv, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	small := 16
	app, perr, err := CreateApp(context.Background(), st, AppRequest{Name: ptr("test"), Settings: &SettingsRequest{Buckets: &small}}, e.now)
	if perr != nil || err != nil {
		t.Fatal(perr, err)
	}
	e.app = app
	ln := fasthttputil.NewInmemoryListener()
	e.ln = ln
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunListener(ctx, ln) }()
	e.client = &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunListener: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("store close: %v", err)
		}
	})
	return e
}

func ptr[T any](v T) *T { return &v }

type resp = apitest.Resp

// do sends a request; headers alternate name, value. A "" content type sends none.
func (e *testEnv) do(method, path, body string, headers ...string) resp {
	e.t.Helper()
	return apitest.Do(e.t, e.client, method, "http://pushd.test"+path, body, headers...)
}

func (e *testEnv) appHeaders() []string {
	return []string{HeaderAppID, e.app.ID, HeaderKey, e.app.AppKey}
}

func (e *testEnv) masterHeaders() []string {
	return []string{HeaderAppID, e.app.ID, HeaderKey, e.app.MasterKey + ",master"}
}

func (e *testEnv) adminHeaders() []string {
	return []string{"Authorization", "Bearer admin-token-0123456789"}
}

func TestAPIOpsEndpoints(t *testing.T) {
	e := newEnv(t)
	if r := e.do("GET", "/healthz", ""); r.Status != 200 {
		t.Fatalf("healthz %d", r.Status)
	}
	if r := e.do("GET", "/readyz", ""); r.Status != 200 {
		t.Fatalf("readyz %d %s", r.Status, r.Body)
	}
	e.srv.SetReady(false)
	if r := e.do("GET", "/readyz", ""); r.Status != 503 || r.Code(t) != 503 {
		t.Fatalf("readyz when not ready: %d %s", r.Status, r.Body)
	}
	e.do("GET", "/nope", "")
	r := e.do("GET", "/metrics", "")
	if r.Status != 200 {
		t.Fatalf("metrics %d", r.Status)
	}
	for _, want := range []string{
		`pushd_api_requests_total{route="healthz",status="200"} 1`,
		`pushd_api_requests_total{route="readyz",status="503"} 1`,
		`pushd_api_requests_total{route="not_found",status="404"} 1`,
		`pushd_api_request_duration_seconds_bucket{route="healthz"`,
	} {
		if !strings.Contains(string(r.Body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestAPIRouteErrors(t *testing.T) {
	e := newEnv(t)
	r := e.do("GET", "/1.1/nothing", "", e.appHeaders()...)
	if r.Status != 404 || r.Code(t) != 404 {
		t.Fatalf("unknown route: %d %s", r.Status, r.Body)
	}
	r = e.do("PATCH", "/1.1/installations", "", e.appHeaders()...)
	if r.Status != 405 || r.Code(t) != 404 {
		t.Fatalf("wrong method: %d %s", r.Status, r.Body)
	}
	if allow := string(r.Header.Peek("Allow")); allow != "GET, POST" {
		t.Fatalf("405 on the collection: Allow %q, want GET, POST", allow)
	}
	r = e.do("POST", "/1.1/installations/abc", "{}", e.appHeaders()...)
	if allow := string(r.Header.Peek("Allow")); r.Status != 405 || allow != "GET, PUT, DELETE" {
		t.Fatalf("405 on one installation: %d, Allow %q, want GET, PUT, DELETE", r.Status, allow)
	}
	r = e.do("GET", "/1.1/installations/a/b/c/d/e/f/g/h/i/j", "", e.appHeaders()...)
	if r.Status != 404 {
		t.Fatalf("deep path: %d", r.Status)
	}
}

func TestAPIBodyRules(t *testing.T) {
	e := newEnv(t)
	h := e.appHeaders()
	cases := []struct {
		name, body, ctype string
		status, code      int
	}{
		{"array body", `[1,2]`, "application/json", 400, 107},
		{"string body", `"x"`, "application/json", 400, 107},
		{"null body", `null`, "application/json", 400, 107},
		{"malformed", `{"a":`, "application/json", 400, 107},
		{"empty", ``, "application/json", 400, 107},
		{"no content type", `{}`, "", 415, 415},
		{"form content type", `{}`, "application/x-www-form-urlencoded", 415, 415},
		{"oversize", `{"deviceType":"android","installationId":"x","pad":"` + strings.Repeat("a", InstallationBodyLimit) + `"}`, "application/json", 413, 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := append(append([]string{}, h...), "Content-Type", c.ctype)
			req := fasthttp.AcquireRequest()
			defer fasthttp.ReleaseRequest(req)
			r := e.do("POST", "/1.1/installations", c.body, hdr...)
			if r.Status != c.status || r.Code(t) != c.code {
				t.Fatalf("got %d %s, want %d code %d", r.Status, r.Body, c.status, c.code)
			}
		})
	}
	// The server-wide cap answers with {code, error} too.
	r := e.announceBody(t, "PUT", "/admin/apps/x/credentials/apns", DefaultMaxBodyBytes+1)
	if r.Status != 413 || r.Code(t) != 413 {
		t.Fatalf("over server cap: %d %s", r.Status, r.Body)
	}
}

// TestAPIRequestSizeLimits: a where of several KiB fits in a list query's URL, longer request
// heads get 431, a body over the server cap names the limit of its route, and a malformed body
// says what is wrong with it.
func TestAPIRequestSizeLimits(t *testing.T) {
	e := newEnv(t)
	e.create(`{"deviceType":"android","installationId":"wanted"}`)
	ids := []string{`"wanted"`}
	for i := len(ids); i < 400; i++ { // about 10 KiB once encoded: more than fasthttp's default 4 KiB
		ids = append(ids, fmt.Sprintf(`"absent-device-%04d"`, i))
	}
	where := `{"installationId":{"$in":[` + strings.Join(ids, ",") + `]}}`
	r := e.do("GET", "/1.1/installations?where="+url.QueryEscape(where), "", e.masterHeaders()...)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"installationId":"wanted"`) {
		t.Fatalf("long where: %d %.200s", r.Status, r.Body)
	}

	r = e.do("GET", "/1.1/installations?where="+strings.Repeat("x", MaxHeaderBytes), "", e.masterHeaders()...)
	if r.Status != 431 || r.Code(t) != 413 || !strings.Contains(errText(t, r), "headers are larger than 16384 bytes") {
		t.Fatalf("over the header limit: %d %s", r.Status, r.Body)
	}

	r = e.announceBody(t, "POST", "/1.1/installations", DefaultMaxBodyBytes+1)
	if want := fmt.Sprintf("larger than %d bytes", InstallationBodyLimit); r.Status != 413 || !strings.Contains(errText(t, r), want) {
		t.Fatalf("over the server cap on an installation route: %d %s, want %q", r.Status, r.Body, want)
	}

	r = e.do("POST", "/1.1/installations", `{bad`, e.appHeaders()...)
	if r.Status != 400 || r.Code(t) != 107 || !strings.Contains(errText(t, r), "a JSON dictionary is expected: ") || !strings.Contains(errText(t, r), "invalid character 'b'") {
		t.Fatalf("malformed body: %d %s", r.Status, r.Body)
	}
	if n := e.count(e.app.ID, 16); n != 1 {
		t.Fatalf("refused requests changed the store: %d installations", n)
	}
}

// announceBody sends the head of a request announcing a JSON body of n bytes, never the
// body, and returns the answer: the server must answer from the Content-Length alone (a
// client still writing a body the server refuses would race with the server closing).
func (e *testEnv) announceBody(t *testing.T, method, path string, n int) resp {
	t.Helper()
	conn, err := e.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", method, path, n)
	var res fasthttp.Response
	if err := res.Read(bufio.NewReader(conn)); err != nil {
		t.Fatal(err)
	}
	return resp{Status: res.StatusCode(), Body: res.Body()}
}

// errText is the error text of an {code, error} answer.
func errText(t *testing.T, r resp) string {
	t.Helper()
	r.Code(t)
	return r.JSON(t)["error"].(string)
}

func TestAPIShutdownDrains(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := New(Config{}, Deps{Apps: st, Installations: st})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := slowRoute(srv, "GET", "/slow")
	ln := fasthttputil.NewInmemoryListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunListener(ctx, ln) }()
	client := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	got := make(chan string, 1)
	go func() {
		code, body, err := client.Get(nil, "http://x/slow")
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(body) + " " + itoa(code)
	}()
	<-entered
	cancel()
	// Readiness turns false before the drain completes.
	waitfor.True(t, 10*time.Second, "readiness false on stop", func() bool { return !srv.ready.Load() })
	close(release)
	if g := <-got; g != `{"done":true} 200` {
		t.Fatalf("in-flight request got %q", g)
	}
	if err := <-done; err != nil {
		t.Fatalf("RunListener: %v", err)
	}
}

// slowRoute registers method path with a handler that closes entered, then answers 200 once
// release is closed.
func slowRoute(srv *Server, method, path string) (entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	srv.Register(Route{Method: method, Path: path, Name: "slow"}, func(ctx *fasthttp.RequestCtx, _ *Call) error {
		close(entered)
		<-release
		WriteJSON(ctx, 200, []byte(`{"done":true}`))
		return nil
	})
	return entered, release
}

// TestAPIInFlightCountsRequestsInHand: the count a node's fan-out reads (Deps.InFlight) is
// busy while an intake handler runs (a POST), idle once the answer is written, and a read (GET)
// does not count.
func TestAPIInFlightCountsRequestsInHand(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in := new(InFlight)
	srv, err := New(Config{}, Deps{Apps: st, Installations: st, InFlight: in})
	if err != nil {
		t.Fatal(err)
	}
	entered, release := slowRoute(srv, "POST", "/slow")
	readEntered, readRelease := slowRoute(srv, "GET", "/slow-read")
	ln := fasthttputil.NewInmemoryListener()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.RunListener(ctx, ln) }()
	client := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	if in.Busy() {
		t.Fatal("busy before any request")
	}
	readGot := make(chan int, 1)
	go func() {
		code, _, _ := client.Get(nil, "http://x/slow-read")
		readGot <- code
	}()
	<-readEntered
	if in.Busy() {
		t.Fatal("busy while only a GET is in hand")
	}
	close(readRelease)
	if code := <-readGot; code != 200 {
		t.Fatalf("GET status %d", code)
	}
	got := make(chan int, 1)
	go func() {
		code, _, _ := client.Post(nil, "http://x/slow", nil)
		got <- code
	}()
	<-entered
	if !in.Busy() {
		t.Fatal("idle while a handler runs")
	}
	close(release)
	if code := <-got; code != 200 {
		t.Fatalf("status %d", code)
	}
	waitfor.True(t, 10*time.Second, "idle once answered", func() bool { return !in.Busy() })
	if code := apitest.Do(t, client, "POST", "http://x/no-such-route", "{}").Code(t); code != 404 || in.Busy() {
		t.Fatalf("status %d, busy %v after a 404, want idle", code, in.Busy())
	}
}
