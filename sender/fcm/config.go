package fcm

import (
	"crypto/tls"
	"fmt"

	"github.com/pushd/pushd/sender/gateway"
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
	// ConnConfig: connections and timeouts. StreamsPerConn defaults to 100 (what Google's
	// front ends advertise) and is the most requests one connection carries: with MaxConns
	// open, further sends wait for a free stream. A server advertising fewer streams gets an
	// extra connection per transport rather than a queue on it.
	gateway.ConnConfig
	// Transport is the HTTP/2 client: TransportLean (sender/h2, the default) or TransportStd
	// (net/http over x/net/http2); see docs/decisions.md, "Lean FCM transport".
	Transport string
	// TLS is the base client TLS configuration (nil: system roots); tests set the simulator's.
	TLS *tls.Config
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.Transport == "" {
		c.Transport = DefaultTransport
	}
	c.ConnConfig = c.ConnConfig.WithDefaults(100)
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch c.Transport {
	case "", TransportStd, TransportLean:
	default:
		return fmt.Errorf("fcm: unknown transport %q: want %s or %s", c.Transport, TransportLean, TransportStd)
	}
	return c.ConnConfig.Validate("fcm")
}
