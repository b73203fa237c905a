package sim

import "crypto/tls"

// endpoint is what every gateway simulator shares: its TLS server and its recorder. Each
// simulator embeds it, so the accessors below are one code for all of them.
type endpoint struct {
	srv *tlsServer
	rec *recorder
}

// URL is the simulator's base URL, https://127.0.0.1:port.
func (e *endpoint) URL() string { return e.srv.url() }

// ClientTLS trusts the simulator's self-signed certificate and offers ALPN h2 (a client that
// speaks HTTP/1.1 only ignores it).
func (e *endpoint) ClientTLS() *tls.Config { return e.srv.clientTLS() }

// CertPEM is the simulator's self-signed certificate, for clients in other processes.
func (e *endpoint) CertPEM() []byte { return e.srv.certPEM }

// Close stops serving and drops open connections.
func (e *endpoint) Close() error { return e.srv.close() }

// Stats returns the counters since start or the last Reset.
func (e *endpoint) Stats() Stats { return e.rec.snapshot(true) }

// Sent returns the recorded accepted requests (see each simulator's Record option).
func (e *endpoint) Sent() []Sent { return e.rec.recorded() }
