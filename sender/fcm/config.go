package fcm

import (
	"crypto/tls"

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
	// open, further sends wait for a free stream. A server advertising fewer streams is held to
	// its figure.
	gateway.ConnConfig
	// TLS is the base client TLS configuration (nil: system roots); tests set the simulator's.
	TLS *tls.Config
}

// DefaultMaxConns is FCM's default ConnConfig.MaxConns. At 100 streams a connection, the
// other gateways' 4 (gateway.DefaultMaxConns) capped FCM at 400 deliveries in flight: about 20,000 a second once the
// gateway takes 20 ms to answer (0.47 of the zero-latency rate in the load test's latency
// comparison). 10 would carry the dispatcher's 1,000 in flight (sender.Config.Workers) if a
// batch's streams filled connections evenly; 16 leaves room for the uneven fill (measured
// 0.85–0.86 of the zero-latency rate at 20 ms against 0.76–0.82 with 10, the same CPU per
// delivery). A pool opens a connection only when every open one is full.
const DefaultMaxConns = 16

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	c.ConnConfig = c.ConnConfig.WithDefaults(DefaultMaxConns, 100)
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	return c.ConnConfig.Validate("fcm")
}
