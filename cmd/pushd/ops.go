package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
)

// opsServer serves /metrics, /healthz and /readyz on nodes without the api role (fanout and
// scheduler nodes of a cluster), so that they can be probed and scraped too. On api nodes the
// API server answers the same paths.
type opsServer struct {
	addr string
	reg  *telemetry.Registry
	log  *zap.Logger
	// bound reports the listening address (tests).
	bound func(string)
}

func (o *opsServer) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("cannot listen on --ops-addr %s: %w", o.addr, err)
	}
	if o.bound != nil {
		o.bound(ln.Addr().String())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		o.reg.WritePrometheus(w)
	})
	ok := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /readyz", ok)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	o.log.Info("ops endpoints serving", zap.String("addr", ln.Addr().String()))
	select {
	case err := <-errc:
		return fmt.Errorf("ops server stopped: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("cannot stop the ops server: %w", err)
	}
	return nil
}
