package apns

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/h2"
)

// scriptAction is what the scripted server does with one whole request.
type scriptAction int

const (
	answerOK scriptAction = iota
	refuseStream
	goAwayBefore // GOAWAY with last-stream-id 0: the request was not processed
	resetInternal
)

// scriptServer is an HTTP/2 server over TLS (ALPN h2) written with the raw Framer, so a test
// can answer a request with what Go's server will not do on demand. script gets the number
// of requests seen so far (0 for the first) and the connection's index.
type scriptServer struct {
	url    string
	tls    *tls.Config
	mu     sync.Mutex
	reqs   int
	conns  int
	script func(req, conn int) scriptAction
}

func newScriptServer(t *testing.T, script func(req, conn int) scriptAction) *scriptServer {
	t.Helper()
	certSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	certSrv.StartTLS() // for its certificate and a client config trusting it
	certSrv.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: certSrv.TLS.Certificates, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	s := &scriptServer{url: "https://" + ln.Addr().String(), script: script,
		tls: certSrv.Client().Transport.(*http.Transport).TLSClientConfig}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			idx := s.conns
			s.conns++
			s.mu.Unlock()
			go s.serve(nc, idx)
		}
	}()
	return s
}

func (s *scriptServer) serve(nc net.Conn, conn int) {
	defer nc.Close()
	pre := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(nc, pre); err != nil {
		return
	}
	fr := http2.NewFramer(nc, nc)
	if fr.WriteSettings() != nil {
		return
	}
	dec := hpack.NewDecoder(4096, func(hpack.HeaderField) {})
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		var id uint32
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
			}
			continue
		case *http2.HeadersFrame:
			_, _ = dec.Write(f.HeaderBlockFragment())
			if !f.StreamEnded() {
				continue
			}
			id = f.StreamID
		case *http2.DataFrame:
			if !f.StreamEnded() {
				continue
			}
			id = f.StreamID
		default:
			continue
		}
		s.mu.Lock()
		n := s.reqs
		s.reqs++
		s.mu.Unlock()
		switch s.script(n, conn) {
		case refuseStream:
			_ = fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
		case resetInternal:
			_ = fr.WriteRSTStream(id, http2.ErrCodeInternal)
		case goAwayBefore:
			_ = fr.WriteGoAway(0, http2.ErrCodeNo, nil) // the client closes once idle
		default:
			hb.Reset()
			_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: true})
		}
	}
}

func (s *scriptServer) counts() (reqs, conns int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs, s.conns
}

// The lean transport's "was it processed" mapped to outcomes: a request the server did not
// process goes again at once (on a new connection after a GOAWAY), at most three times; one
// it may have processed is a retry for the pool, never sent again by the client.
func TestAPNsLeanProcessedSemantics(t *testing.T) {
	keys := newSim(t, sim.APNsConfig{}) // only for a key: the server here checks no JWT
	cases := []struct {
		name              string
		script            func(req, conn int) scriptAction
		want              gateway.Reply
		wantReqs, wantCon int
	}{
		{"refused then answered", func(req, _ int) scriptAction {
			if req == 0 {
				return refuseStream
			}
			return answerOK
		}, gateway.Reply{Kind: gateway.KindSent}, 2, 1},
		{"goaway below the stream then answered", func(_, conn int) scriptAction {
			if conn == 0 {
				return goAwayBefore
			}
			return answerOK
		}, gateway.Reply{Kind: gateway.KindSent}, 2, 2},
		{"always refused", func(int, int) scriptAction { return refuseStream },
			gateway.Reply{Kind: gateway.KindRetry, Reason: "apns did not process the request"}, h2.NotProcessedAttempts, 1},
		{"reset after processing", func(int, int) scriptAction { return resetInternal },
			gateway.Reply{Kind: gateway.KindRetry, Reason: "apns stream reset: INTERNAL_ERROR"}, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := newScriptServer(t, c.script)
			cfg := Config{ProdEndpoint: srv.url, DevEndpoint: srv.url, TLS: srv.tls}
			cl := mustClient(t, tokenCreds(t, keys, testTeam), delivery(devToken(0)), cfg)
			if got := cl.Send(context.Background(), delivery(devToken(0))); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if reqs, conns := srv.counts(); reqs != c.wantReqs || conns != c.wantCon {
				t.Fatalf("server saw %d requests on %d connections, want %d on %d", reqs, conns, c.wantReqs, c.wantCon)
			}
		})
	}
}

// A server allowing one stream (as APNs on a fresh token-auth connection): the lean
// transport waits for its SETTINGS and queues the rest on the connection, so a burst of
// callers is all delivered within the limit.
func TestAPNsLeanServerLimitOfOne(t *testing.T) {
	s := newSim(t, sim.APNsConfig{MaxConcurrentStreams: 1})
	cfg := simConfig(s)
	cfg.MaxConns, cfg.StreamsPerConn = 1, 64
	cl := mustClient(t, tokenCreds(t, s, testTeam), delivery(devToken(0)), cfg)
	const senders, per = 32, 8
	var wg sync.WaitGroup
	var failed sync.Map
	for g := range senders {
		wg.Go(func() {
			for i := range per {
				if r := cl.Send(context.Background(), delivery(devToken(g*per+i))); r.Kind != gateway.KindSent {
					failed.Store(r.Reason, true)
				}
			}
		})
	}
	wg.Wait()
	failed.Range(func(k, _ any) bool { t.Errorf("failed: %v", k); return true })
	if st := s.Stats(); st.Accepted != senders*per {
		t.Fatalf("accepted %d of %d", st.Accepted, senders*per)
	}
}
