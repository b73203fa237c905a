package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
)

// opsServer serves /metrics, /healthz (also /livez) and /readyz on nodes without the api role
// (fanout, scheduler and gateway nodes of a cluster), so that they can be probed and scraped too. On api nodes the
// API server answers the same paths; this one answers them the same way (docs/operations.md,
// "Health and metrics"): the same bodies, readiness false from the stop on for drainDelay, and
// {code, error} for an unknown path or another method.
type opsServer struct {
	addr string
	// drainDelay is how long the server keeps answering, /readyz 503, after the stop began.
	drainDelay time.Duration
	reg        *telemetry.Registry
	log        *zap.Logger
	ready      atomic.Bool
	// pprof serves net/http/pprof under /debug/pprof/ (--pprof).
	pprof bool

	// bound reports the listening address (test hook).
	bound func(string)
	// endDrain, when closed, ends the drain before drainDelay (test hook).
	endDrain <-chan struct{}
}

// opsShutdownTimeout bounds how long in-flight ops requests (a scrape) may take to finish
// after the drain.
const opsShutdownTimeout = 5 * time.Second

func (o *opsServer) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("cannot listen on --ops-addr %s: %w", o.addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(o.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	// Ready before Serve: the first request Serve accepts may be a /readyz.
	o.ready.Store(true)
	if o.bound != nil {
		o.bound(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	o.log.Info("ops endpoints serving", zap.String(telemetry.KeyAddr, ln.Addr().String()))
	select {
	case err := <-errc:
		o.ready.Store(false)
		return fmt.Errorf("ops server stopped: %w", err)
	case <-ctx.Done():
	}
	o.ready.Store(false)
	if o.drainDelay > 0 {
		o.log.Info("ops endpoints draining: /readyz answers 503", zap.Duration("drain_delay", o.drainDelay))
		t := time.NewTimer(o.drainDelay)
		select {
		case <-t.C:
		case <-o.endDrain: // nil in production: only the timer ends the drain
			t.Stop()
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), opsShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("cannot stop the ops server: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("ops server stopped: %w", err)
	}
	return nil
}

// serveHTTP routes like the API server: a path is matched without its surrounding slashes,
// only GET is allowed, and everything else is a {code, error} answer.
func (o *opsServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.URL.Path, "/")
	if o.pprof && (path == "debug/pprof" || strings.HasPrefix(path, "debug/pprof/")) {
		servePprof(w, r, strings.TrimPrefix(strings.TrimPrefix(path, "debug/pprof"), "/"))
		return
	}
	switch path {
	case "healthz", "livez", "readyz", "metrics":
	default:
		writeOpsError(w, http.StatusNotFound, push.Errorf(push.CodeNotFoundRoute, "no route for %s %s", r.Method, r.URL.Path))
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeOpsError(w, http.StatusMethodNotAllowed, push.Errorf(push.CodeNotFoundRoute, "method %s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	switch path {
	case "healthz", "livez":
		writeOpsJSON(w, http.StatusOK, `{"status":"ok"}`)
	case "readyz":
		if !o.ready.Load() {
			writeOpsError(w, http.StatusServiceUnavailable, push.Errorf(push.CodeUnavailable, "not ready"))
			return
		}
		writeOpsJSON(w, http.StatusOK, `{"status":"ready"}`)
	case "metrics":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		o.reg.WritePrometheus(w)
	}
}

// servePprof answers /debug/pprof/<name> with net/http/pprof's handlers, named here rather
// than through http.DefaultServeMux, which nothing in pushd serves.
func servePprof(w http.ResponseWriter, r *http.Request, name string) {
	switch name {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default: // the index, and the named profiles: heap, allocs, goroutine, ...
		pprof.Index(w, r)
	}
}

// contentTypeJSON is the API server's JSON content type.
const contentTypeJSON = "application/json; charset=utf-8"

func writeOpsJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// writeOpsError writes the spec's {code, error} body.
func writeOpsError(w http.ResponseWriter, status int, e *push.Error) {
	b, _ := json.Marshal(struct {
		Code  push.Code `json:"code"`
		Error string    `json:"error"`
	}{e.Code, e.Message}) // a code and a string always marshal
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
