package fcm

import (
	"crypto/tls"
	"errors"
	"time"
)

// DefaultEndpoint is Google's FCM host.
const DefaultEndpoint = "https://fcm.googleapis.com"

// Scope is the OAuth2 scope requested for the access token.
const Scope = "https://www.googleapis.com/auth/firebase.messaging"

// Config is the process-wide FCM client configuration. Per-app credentials (and their own
// endpoint override) live in the app's credentials JSON.
type Config struct {
	// Endpoint overrides https://fcm.googleapis.com for every app whose credentials do not
	// name their own (simulators, tests).
	Endpoint string
	// TokenURL overrides the service account's token_uri for every app (simulators, tests).
	TokenURL string
	// MaxConns is the most HTTP/2 connections one pool opens (default 4).
	MaxConns int
	// StreamsPerConn is the most requests one connection carries (default 100, what Google's
	// front ends advertise). The pool opens another connection when every open one carries
	// this many; with MaxConns open, further sends wait for a free stream. A server advertising
	// fewer streams gets an extra connection per transport rather than a queue on it.
	StreamsPerConn int
	// RequestTimeout bounds one send or token request (default 30s).
	RequestTimeout time.Duration
	// ReadIdleTimeout / PingTimeout: HTTP/2 health check of a silent connection (default 15s each).
	ReadIdleTimeout time.Duration
	PingTimeout     time.Duration
	// DialTimeout bounds TCP+TLS connection setup (default 20s).
	DialTimeout time.Duration
	// TLS is the base client TLS configuration (nil: system roots); tests set the simulator's.
	TLS *tls.Config
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.MaxConns == 0 {
		c.MaxConns = 4
	}
	if c.StreamsPerConn == 0 {
		c.StreamsPerConn = 100
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
		return errors.New("fcm: MaxConns and StreamsPerConn must not be negative")
	}
	if c.RequestTimeout < 0 || c.ReadIdleTimeout < 0 || c.PingTimeout < 0 || c.DialTimeout < 0 {
		return errors.New("fcm: timeouts must not be negative")
	}
	return nil
}
