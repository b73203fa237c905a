package apns

import (
	"crypto/tls"
	"errors"
	"time"

	"github.com/sideshow/apns2"
)

// Config is the process-wide APNs client configuration. Per-app credentials and endpoint
// overrides live in the app's credentials JSON (see CredentialsJSON).
type Config struct {
	// ProdEndpoint and DevEndpoint override Apple's hosts for every app whose credentials do not
	// name their own endpoint (simulators, tests). Empty: api.push.apple.com /
	// api.sandbox.push.apple.com.
	ProdEndpoint string
	DevEndpoint  string
	// MaxConns is the most HTTP/2 connections one pool opens (default 4).
	MaxConns int
	// StreamsPerConn is how many requests one connection carries before the pool opens
	// another (default 500, the concurrent-stream figure APNs has been observed to advertise;
	// the transport still honours the live SETTINGS_MAX_CONCURRENT_STREAMS).
	StreamsPerConn int
	// RequestTimeout bounds one request, connection time included (default 30s).
	RequestTimeout time.Duration
	// ReadIdleTimeout: an HTTP/2 PING checks a connection that received no frame for this
	// long (default 15s, as sideshow/apns2); PingTimeout closes it when the PING is unanswered.
	ReadIdleTimeout time.Duration
	PingTimeout     time.Duration
	// DialTimeout bounds TCP+TLS connection setup (default 20s).
	DialTimeout time.Duration
	// TLS is the base client TLS configuration (nil: system roots). Tests set the simulator's
	// ClientTLS() here; client certificates are added per credential.
	TLS *tls.Config
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.ProdEndpoint == "" {
		c.ProdEndpoint = apns2.HostProduction
	}
	if c.DevEndpoint == "" {
		c.DevEndpoint = apns2.HostDevelopment
	}
	if c.MaxConns == 0 {
		c.MaxConns = 4
	}
	if c.StreamsPerConn == 0 {
		c.StreamsPerConn = 500
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.ReadIdleTimeout == 0 {
		c.ReadIdleTimeout = 15 * time.Second
	}
	if c.PingTimeout == 0 {
		c.PingTimeout = 15 * time.Second
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 20 * time.Second
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxConns < 0 || c.StreamsPerConn < 0 {
		return errors.New("apns: MaxConns and StreamsPerConn must not be negative")
	}
	if c.RequestTimeout < 0 || c.ReadIdleTimeout < 0 || c.PingTimeout < 0 || c.DialTimeout < 0 {
		return errors.New("apns: timeouts must not be negative")
	}
	return nil
}
