package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
)

const contentTypeJSON = "application/json; charset=utf-8"

// Body limits. The server-wide cap is what fasthttp reads at all; each route then has its
// own, smaller limit (Route.MaxBody).
const (
	// DefaultMaxBodyBytes caps every request body the server reads: the largest route limit
	// (admin credential uploads carry certificates).
	DefaultMaxBodyBytes = 256 << 10
	// InstallationBodyLimit: an installation document is a few hundred bytes; 16 KiB leaves
	// room for many channels and custom fields while bounding what one client can store.
	InstallationBodyLimit = 16 << 10
	// AdminBodyLimit bounds admin app bodies; credentials use DefaultMaxBodyBytes.
	AdminBodyLimit = 64 << 10
	// MaxHeaderBytes bounds a request's line and headers (fasthttp's read buffer, held per
	// open connection): 16 KiB, as Node's HTTP server, so a `where` of about 15 KiB fits in a
	// list query's URL. Longer ones get 431.
	MaxHeaderBytes = 16 << 10
)

// Config is the API server's configuration. Zero values take the defaults noted.
type Config struct {
	Addr string // listen address, default ":8080"
	// PublicURL is the {base_url} of Location headers (e.g. "https://push.example.com").
	// "" ⇒ http://<Host header>.
	PublicURL string
	// AdminToken guards /admin/ (Authorization: Bearer <token>). "" disables the admin API.
	AdminToken   string
	MaxBodyBytes int           // server-wide body cap, default DefaultMaxBodyBytes
	AppCacheTTL  time.Duration // how long an app read from the store is trusted, default 5s
	// SignSkew is the largest allowed difference between an X-SVC-Sign timestamp and our
	// clock, either way. Default 15 minutes.
	SignSkew time.Duration
	// DrainDelay is how long the server keeps serving after readiness turns false on stop,
	// so a load balancer notices before the listener closes. Default 0.
	DrainDelay time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests. Default 10s.
	ShutdownTimeout time.Duration
	ReadTimeout     time.Duration // default 30s
	IdleTimeout     time.Duration // default 60s
}

func (c *Config) withDefaults() Config {
	out := *c
	if out.Addr == "" {
		out.Addr = ":8080"
	}
	if out.MaxBodyBytes <= 0 {
		out.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if out.AppCacheTTL <= 0 {
		out.AppCacheTTL = 5 * time.Second
	}
	if out.SignSkew <= 0 {
		out.SignSkew = 15 * time.Minute
	}
	if out.ShutdownTimeout <= 0 {
		out.ShutdownTimeout = 10 * time.Second
	}
	if out.ReadTimeout <= 0 {
		out.ReadTimeout = 30 * time.Second
	}
	if out.IdleTimeout <= 0 {
		out.IdleTimeout = 60 * time.Second
	}
	out.PublicURL = strings.TrimRight(out.PublicURL, "/") // "https://push.example.com/" + "/1.1/…"
	return out
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.PublicURL != "" && !strings.HasPrefix(c.PublicURL, "http://") && !strings.HasPrefix(c.PublicURL, "https://") {
		return fmt.Errorf("public URL %q must start with http:// or https://", c.PublicURL)
	}
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		return errors.New("admin token must be at least 16 characters")
	}
	return nil
}

// Deps are what the server calls out to.
type Deps struct {
	Apps          AppStore
	Installations InstallationStore
	Logger        *zap.Logger
	Metrics       *metrics.Set
	// WriteMetrics writes every metric set of the process for GET /metrics.
	WriteMetrics func(io.Writer)
	// Now is the clock; nil ⇒ time.Now.
	Now func() time.Time
	// CredentialValidators check a gateway credential upload by kind (apns, fcm, mi, ...)
	// and return the bytes to store. Kinds absent here are refused.
	CredentialValidators map[string]CredentialValidator
	// Importer serves POST /admin/apps/<id>/installations/import; nil answers it 503.
	Importer InstallationImporter
	// InFlight counts the intake requests being handled; nil ⇒ the server keeps its own. A
	// node shares it with its fan-out worker, which gives way while requests are in hand.
	InFlight *InFlight
}

// InFlight counts the intake requests the server is handling (every method but GET and
// HEAD: pushes, installation upserts, deletes), from routing to the answer written to the
// connection's buffer. Reads (a push's status polled, the console) do not make fan-out wait.
type InFlight struct{ n atomic.Int64 }

// Busy says whether an intake request is being handled right now.
func (f *InFlight) Busy() bool { return f.n.Load() > 0 }

// CredentialValidator checks one uploaded credential of its kind and returns what to store
// (typically the input, normalised). Its error text is shown to the admin: it must not
// quote the secret.
type CredentialValidator func(ctx context.Context, appID string, raw []byte) ([]byte, error)

// AuthMode says who may call a route.
type AuthMode uint8

const (
	AuthNone   AuthMode = iota // ops endpoints
	AuthApp                    // app key or master key
	AuthMaster                 // master key only (403, code 119 with an app key)
	AuthAdmin                  // the admin bearer token
)

// Route describes one endpoint. Path segments starting with ':' match any one non-empty
// segment and are handed to the handler in Call.Params, in order.
type Route struct {
	Method string
	Path   string
	// Name is the route label of metrics: a small fixed set, never an id.
	Name string
	Auth AuthMode
	// JSONBody: the request must carry Content-Type: application/json (POST and PUT).
	JSONBody bool
	// MaxBody is the route's body limit in bytes (0 ⇒ the server-wide cap).
	MaxBody int
}

// Call is what a handler gets besides the fasthttp context: the authenticated app and the
// path parameters. Valid only during the request.
type Call struct {
	App    *push.App // nil for AuthNone and AuthAdmin routes
	Master bool      // the caller used the master key
	Params []string  // values of the ':' segments of Route.Path
	Now    time.Time
	route  *route
}

// Handler serves one route. A returned *push.Error (possibly wrapped) is written as
// {code, error}; any other error is logged and answered with code 1.
type Handler func(ctx *fasthttp.RequestCtx, c *Call) error

type route struct {
	Route
	segs    []string
	handler Handler
	hist    *metrics.Histogram
	byCode  map[int]*metrics.Counter
	other   *metrics.Counter
}

// countedStatuses get a pre-created counter per route; any other status counts as "other".
var countedStatuses = []int{200, 201, 204, 400, 401, 403, 404, 405, 413, 415, 429, 500, 503, 504}

// Server is the REST server.
type Server struct {
	cfg      Config
	deps     Deps
	log      *zap.Logger
	routes   []*route
	notFound *route
	apps     *appCache
	locks    *stripes
	ready    atomic.Bool
	srv      *fasthttp.Server
	ln       net.Listener
	now      func() time.Time
	panics   *metrics.Counter
	// silentGrace is how long a connection that has sent nothing may stay open once a
	// drain starts (5 s, net/http's figure; tests shorten it).
	silentGrace time.Duration
}

// New builds a server and registers the installation, admin and ops routes.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cannot configure api: %w", err)
	}
	if deps.Apps == nil || deps.Installations == nil {
		return nil, errors.New("cannot configure api: Apps and Installations stores are required")
	}
	c := cfg.withDefaults()
	if deps.Logger == nil {
		deps.Logger = zap.NewNop()
	}
	if deps.Metrics == nil {
		deps.Metrics = metrics.NewSet()
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.InFlight == nil {
		deps.InFlight = new(InFlight)
	}
	s := &Server{
		cfg:   c,
		deps:  deps,
		log:   deps.Logger.Named("api"),
		now:   deps.Now,
		locks: newStripes(),

		silentGrace: 5 * time.Second,
	}
	s.apps = newAppCache(deps.Apps, c.AppCacheTTL, deps.Now)
	s.panics = deps.Metrics.NewCounter(`pushd_api_panics_total`)
	s.notFound = s.newRoute(Route{Name: "not_found"}, nil)
	s.registerOps()
	s.registerInstallations()
	s.registerBatch()
	s.registerAdmin()
	s.registerAdminImport()
	s.srv = &fasthttp.Server{
		Handler:               s.serve,
		ErrorHandler:          s.readError,
		Name:                  "pushd",
		MaxRequestBodySize:    c.MaxBodyBytes,
		ReadBufferSize:        MaxHeaderBytes,
		ReadTimeout:           c.ReadTimeout,
		WriteTimeout:          c.ReadTimeout,
		IdleTimeout:           c.IdleTimeout,
		CloseOnShutdown:       true,
		NoDefaultServerHeader: false,
		NoDefaultContentType:  true,
		Logger:                zap.NewStdLog(s.log.Named("fasthttp")),
	}
	return s, nil
}

func (s *Server) newRoute(r Route, h Handler) *route {
	rt := &route{Route: r, handler: h, byCode: make(map[int]*metrics.Counter, len(countedStatuses))}
	if r.Path != "" {
		rt.segs = strings.Split(strings.Trim(r.Path, "/"), "/")
	}
	set := s.deps.Metrics
	rt.hist = set.GetOrCreateHistogram(fmt.Sprintf(`pushd_api_request_duration_seconds{route=%q}`, r.Name))
	for _, code := range countedStatuses {
		rt.byCode[code] = set.GetOrCreateCounter(fmt.Sprintf(`pushd_api_requests_total{route=%q,status="%d"}`, r.Name, code))
	}
	rt.other = set.GetOrCreateCounter(fmt.Sprintf(`pushd_api_requests_total{route=%q,status="other"}`, r.Name))
	return rt
}

// Register adds a route. Call it before Start; routes are matched in registration order
// (register a static path before a ':' pattern that would shadow it).
func (s *Server) Register(r Route, h Handler) {
	if r.Name == "" || r.Method == "" || !strings.HasPrefix(r.Path, "/") {
		panic(fmt.Sprintf("BUG: route %+v needs a method, a name and an absolute path", r))
	}
	s.routes = append(s.routes, s.newRoute(r, h))
}

// SetReady sets what /readyz answers.
func (s *Server) SetReady(ok bool) { s.ready.Store(ok) }

// Handler returns the root request handler (for tests and embedding).
func (s *Server) Handler() fasthttp.RequestHandler { return s.serve }

// allowedMethods lists the methods some route takes on path, for a 405's Allow header.
func (s *Server) allowedMethods(path []byte) string {
	var out []string
	for _, m := range [...]string{"GET", "POST", "PUT", "DELETE"} {
		if rt, _, _ := s.match([]byte(m), path); rt != nil {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// match finds the route of a path. It returns the route (nil if none), the parameter
// values, and whether some route has this path with another method.
func (s *Server) match(method, path []byte) (*route, []string, bool) {
	p := bytes.Trim(path, "/")
	var segs [8][]byte
	n := 0
	for len(p) > 0 && n < len(segs) {
		i := bytes.IndexByte(p, '/')
		if i < 0 {
			segs[n] = p
			n++
			p = nil
			break
		}
		segs[n] = p[:i]
		n++
		p = p[i+1:]
	}
	if len(p) > 0 {
		return nil, nil, false // deeper than any route
	}
	otherMethod := false
	for _, rt := range s.routes {
		if len(rt.segs) != n {
			continue
		}
		ok := true
		nparams := 0
		for i, seg := range rt.segs {
			if seg[0] == ':' {
				if len(segs[i]) == 0 {
					ok = false
					break
				}
				nparams++
				continue
			}
			if string(segs[i]) != seg {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if string(method) != rt.Method {
			otherMethod = true
			continue
		}
		var params []string
		if nparams > 0 {
			params = make([]string, 0, nparams)
			for i, seg := range rt.segs {
				if seg[0] == ':' {
					params = append(params, string(segs[i]))
				}
			}
		}
		return rt, params, false
	}
	return nil, nil, otherMethod
}

func (s *Server) serve(ctx *fasthttp.RequestCtx) {
	if !ctx.IsGet() && !ctx.IsHead() {
		s.deps.InFlight.n.Add(1)
		defer s.deps.InFlight.n.Add(-1)
	}
	start := time.Now()
	path, pathOK := routePath(ctx)
	var rt *route
	var params []string
	otherMethod := false
	if pathOK {
		rt, params, otherMethod = s.match(ctx.Method(), path)
	}
	if rt == nil {
		rt = s.notFound
		switch {
		case !pathOK:
			WriteError(ctx, push.Errorf(push.CodeNotFoundRoute,
				"no route for %s %q: a path may not hold encoded separators (%%2F, %%5C), backslashes or dot segments", ctx.Method(), ctx.URI().PathOriginal()))
		case otherMethod:
			ctx.Response.Header.Set("Allow", s.allowedMethods(path))
			writeErrorStatus(ctx, fasthttp.StatusMethodNotAllowed,
				push.Errorf(push.CodeNotFoundRoute, "method %s is not allowed on %s", ctx.Method(), path))
		default:
			WriteError(ctx, push.Errorf(push.CodeNotFoundRoute, "no route for %s %s", ctx.Method(), path))
		}
	} else {
		s.dispatch(ctx, rt, params)
	}
	rt.hist.UpdateDuration(start)
	if c, ok := rt.byCode[ctx.Response.StatusCode()]; ok {
		c.Inc()
	} else {
		rt.other.Inc()
	}
}

func (s *Server) dispatch(ctx *fasthttp.RequestCtx, rt *route, params []string) {
	defer func() {
		if p := recover(); p != nil {
			s.panics.Inc()
			s.log.Error("handler panicked", zap.String(telemetry.KeyRoute, rt.Name), zap.Any("panic", p), zap.Stack("stack"))
			writeInternal(ctx)
		}
	}()
	c := Call{Params: params, Now: s.now(), route: rt}
	switch rt.Auth {
	case AuthApp, AuthMaster:
		app, master, perr := s.authenticate(ctx, c.Now)
		if perr != nil {
			WriteError(ctx, perr)
			return
		}
		if rt.Auth == AuthMaster && !master {
			WriteError(ctx, push.Errorf(push.CodeForbiddenClient, "this operation needs the master key"))
			return
		}
		c.App, c.Master = app, master
	case AuthAdmin:
		if perr := s.authenticateAdmin(ctx); perr != nil {
			WriteError(ctx, perr)
			return
		}
	}
	// The body's type and size are checked once the caller is known: a caller without
	// credentials learns 401, whatever it sent.
	if rt.JSONBody {
		if !isJSONContentType(ctx.Request.Header.ContentType()) {
			WriteError(ctx, push.Errorf(push.CodeUnsupportedMedia, "Content-Type must be application/json"))
			return
		}
	}
	limit := rt.MaxBody
	if limit <= 0 {
		limit = s.cfg.MaxBodyBytes
	}
	if len(ctx.Request.Body()) > limit {
		WriteError(ctx, push.Errorf(push.CodeTooLarge, "request body is larger than %d bytes", limit))
		return
	}
	if err := rt.handler(ctx, &c); err != nil {
		if pe := asPushError(err); pe != nil {
			WriteError(ctx, pe)
			return
		}
		s.log.Error("request failed", zap.String(telemetry.KeyRoute, rt.Name), zap.Error(err))
		writeInternal(ctx)
	}
}

// readError answers requests fasthttp could not read (body over the server cap, bad
// framing, timeouts) with {code, error}.
func (s *Server) readError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		// The headers were read: name the limit of the route the request was for.
		limit := s.cfg.MaxBodyBytes
		if path, ok := routePath(ctx); ok {
			if rt, _, _ := s.match(ctx.Method(), path); rt != nil && rt.MaxBody > 0 {
				limit = rt.MaxBody
			}
		}
		WriteError(ctx, push.Errorf(push.CodeTooLarge, "request body is larger than %d bytes", limit))
	case errors.As(err, &small):
		writeErrorStatus(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, push.Errorf(push.CodeTooLarge,
			"request line and headers are larger than %d bytes (a where in the URL must be shorter)", MaxHeaderBytes))
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			writeErrorStatus(ctx, fasthttp.StatusRequestTimeout, push.Errorf(push.CodeTimeout, "request timeout"))
			return
		}
		writeErrorStatus(ctx, fasthttp.StatusBadRequest, push.Errorf(push.CodeInvalidJSON, "cannot parse the HTTP request"))
	}
}

func isJSONContentType(ct []byte) bool {
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return bytes.EqualFold(bytes.TrimSpace(ct), []byte("application/json"))
}

// WriteJSON writes a success response with a pre-encoded JSON body.
func WriteJSON(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.Response.Header.SetContentType(contentTypeJSON)
	ctx.SetStatusCode(status)
	ctx.SetBody(body)
}

func (s *Server) registerOps() {
	s.Register(Route{Method: "GET", Path: "/healthz", Name: "healthz"}, func(ctx *fasthttp.RequestCtx, _ *Call) error {
		WriteJSON(ctx, 200, []byte(`{"status":"ok"}`))
		return nil
	})
	// /livez is /healthz under the name Kubernetes probes use (liveness: the process serves).
	s.Register(Route{Method: "GET", Path: "/livez", Name: "livez"}, func(ctx *fasthttp.RequestCtx, _ *Call) error {
		WriteJSON(ctx, 200, []byte(`{"status":"ok"}`))
		return nil
	})
	s.Register(Route{Method: "GET", Path: "/readyz", Name: "readyz"}, func(ctx *fasthttp.RequestCtx, _ *Call) error {
		if !s.ready.Load() {
			writeErrorStatus(ctx, fasthttp.StatusServiceUnavailable, push.Errorf(push.CodeUnavailable, "not ready"))
			return nil
		}
		WriteJSON(ctx, 200, []byte(`{"status":"ready"}`))
		return nil
	})
	s.Register(Route{Method: "GET", Path: "/metrics", Name: "metrics"}, func(ctx *fasthttp.RequestCtx, _ *Call) error {
		ctx.Response.Header.SetContentType("text/plain; version=0.0.4; charset=utf-8")
		if s.deps.WriteMetrics != nil {
			s.deps.WriteMetrics(ctx)
		} else {
			s.deps.Metrics.WritePrometheus(ctx)
		}
		return nil
	})
}

// Start binds the listen address (service.Starter): a port in use fails here, before the
// services started after the API.
func (s *Server) Start(context.Context) error {
	if s.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address, after Start.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Run serves until ctx is cancelled, then turns readiness off, waits DrainDelay, stops
// accepting and drains in-flight requests (up to ShutdownTimeout).
func (s *Server) Run(ctx context.Context) error {
	return s.RunListener(ctx, nil)
}

// RunListener is Run on a given listener (tests use fasthttputil's in-memory one); nil
// uses the listener bound by Start (binding it now if needed).
func (s *Server) RunListener(ctx context.Context, ln net.Listener) error {
	if ln == nil {
		if err := s.Start(ctx); err != nil {
			return err
		}
		ln = s.ln
	}
	errc := make(chan error, 1)
	sl := newSignalListener(ln)
	// Ready before Serve: the first request Serve accepts may be a /readyz, and nothing can
	// ask before Serve runs.
	s.SetReady(true)
	go func() { errc <- s.srv.Serve(sl) }()
	// Shutdown only knows listeners Serve has registered: wait for the first Accept.
	select {
	case <-sl.accepting:
	case err := <-errc:
		s.SetReady(false)
		return fmt.Errorf("cannot serve http: %w", err)
	}
	s.log.Info("api serving", zap.String(telemetry.KeyAddr, ln.Addr().String()))
	select {
	case err := <-errc:
		s.SetReady(false)
		return fmt.Errorf("cannot serve http: %w", err)
	case <-ctx.Done():
	}
	s.SetReady(false)
	if s.cfg.DrainDelay > 0 {
		t := time.NewTimer(s.cfg.DrainDelay)
		<-t.C
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	// fasthttp's drain closes idle keep-alive connections but not one that never sent a
	// request (it waits on it until ReadTimeout): close those once they have been silent for
	// silentGrace, as net/http's Shutdown does with its new connections.
	grace := min(s.silentGrace, s.cfg.ShutdownTimeout/2)
	drained := make(chan struct{})
	go sl.closeSilent(grace, drained)
	err := s.srv.ShutdownWithContext(sctx)
	close(drained)
	if err != nil {
		return fmt.Errorf("cannot drain http requests: %w", err)
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("cannot serve http: %w", err)
	}
	s.log.Info("api stopped")
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// signalListener closes accepting when Serve first calls Accept, and tracks the connections
// that have not sent a byte yet so that a drain can close them (closeSilent).
type signalListener struct {
	net.Listener
	once      sync.Once
	accepting chan struct{}

	mu     sync.Mutex
	silent map[*silentConn]time.Time // accepted, nothing read yet: when accepted; guarded by mu
}

func newSignalListener(ln net.Listener) *signalListener {
	return &signalListener{Listener: ln, accepting: make(chan struct{}), silent: make(map[*silentConn]time.Time)}
}

func (l *signalListener) Accept() (net.Conn, error) {
	l.once.Do(func() { close(l.accepting) })
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &silentConn{Conn: c, l: l}
	l.mu.Lock()
	l.silent[sc] = time.Now()
	l.mu.Unlock()
	return sc, nil
}

func (l *signalListener) forget(c *silentConn) {
	l.mu.Lock()
	delete(l.silent, c)
	l.mu.Unlock()
}

// closeSilent closes, every 100 ms until done is closed, the connections that were accepted at
// least grace ago and have sent nothing: a client's spare keep-alive connection, a load
// balancer's TCP probe. One that sends its first bytes meanwhile is served as usual.
func (l *signalListener) closeSilent(grace time.Duration, done <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		cutoff := time.Now().Add(-grace)
		var idle []*silentConn
		l.mu.Lock()
		for c, at := range l.silent {
			if !at.After(cutoff) {
				idle = append(idle, c)
				delete(l.silent, c)
			}
		}
		l.mu.Unlock()
		for _, c := range idle {
			_ = c.Conn.Close()
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// silentConn is an accepted connection; it leaves its listener's silent set at its first read
// of any byte, or when closed.
type silentConn struct {
	net.Conn
	l     *signalListener
	spoke atomic.Bool
}

func (c *silentConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.spoke.Load() {
		c.spoke.Store(true)
		c.l.forget(c)
	}
	return n, err
}

func (c *silentConn) Close() error {
	if !c.spoke.Load() {
		c.l.forget(c)
	}
	return c.Conn.Close()
}
