package apns

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/sender/gateway"
)

// A GOAWAY while a request is in flight: the request (below the last-stream-id) still gets
// its answer, and the next request goes out on a new connection.
func TestAPNsClientGoAwayKeepsStreamsInFlight(t *testing.T) {
	release := make(chan struct{})
	var blocked atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, devToken(0)):
			blocked.Store(true)
			<-release
		case strings.HasSuffix(r.URL.Path, devToken(1)):
			w.Header().Set("Connection", "close") // net/http's HTTP/2 server: a graceful GOAWAY
		}
		w.WriteHeader(http.StatusOK)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	s := newSim(t, sim.APNsConfig{}) // only for a key: the server here checks no JWT
	cfg := Config{ProdEndpoint: srv.URL, DevEndpoint: srv.URL,
		TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig}
	cfg.MaxConns = 1
	cl := mustClient(t, tokenCreds(t, s, testTeam), delivery(devToken(0)), cfg)
	first := make(chan gateway.Reply, 1)
	go func() { first <- cl.Send(context.Background(), delivery(devToken(0))) }()
	waitfor.True(t, 10*time.Second, "the first request in the handler", blocked.Load)
	if r := cl.Send(context.Background(), delivery(devToken(1))); r.Kind != gateway.KindSent {
		t.Fatalf("request answered with the GOAWAY: %+v", r)
	}
	if r := cl.Send(context.Background(), delivery(devToken(2))); r.Kind != gateway.KindSent {
		t.Fatalf("request after the GOAWAY: %+v", r)
	}
	close(release)
	if r := <-first; r.Kind != gateway.KindSent {
		t.Fatalf("request in flight during the GOAWAY: %+v", r)
	}
}
