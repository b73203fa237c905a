package vendor

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/pushd/pushd/sender/gateway"
)

// NewHTTPClient returns the keep-alive client of one app's route: HTTP/2 when the gateway
// offers it by ALPN, else HTTP/1.1 with up to MaxConns*StreamsPerConn idle connections kept,
// so a pool's concurrent requests reuse their connections instead of reconnecting.
func NewHTTPClient(cfg gateway.ConnConfig, base *tls.Config) *http.Client {
	tc := base
	if tc == nil {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
	} else {
		tc = tc.Clone()
	}
	idle := cfg.MaxConns * cfg.StreamsPerConn
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:     tc,
			ForceAttemptHTTP2:   true,
			DialContext:         (&net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 15 * time.Second}).DialContext,
			TLSHandshakeTimeout: cfg.DialTimeout,
			MaxIdleConns:        idle,
			MaxIdleConnsPerHost: idle,
			IdleConnTimeout:     90 * time.Second,
		},
		Timeout: cfg.RequestTimeout,
	}
}

// maxDrain bounds what DrainClose reads from a reply nobody needs.
const maxDrain = 256 << 10

// DrainClose reads rc to its end (bounded) and closes it, so the connection is reused.
func DrainClose(rc io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, maxDrain))
	_ = rc.Close()
}

// ReadReply reads a gateway reply body, bounded.
func ReadReply(r io.Reader) ([]byte, error) { return io.ReadAll(io.LimitReader(r, maxReply)) }
