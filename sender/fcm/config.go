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
// comparison). 16 (1,600 in flight) held 0.85–0.86 of that rate while the zero-latency rate
// was 15–20k/s; once pushd reached 40–50k/s there, a gateway that answers in 20 ms and takes
// longer under load kept 16 connections at 34–37k/s (0.73–0.80), as h2load on 16 connections
// (0.65–0.69). 32 gave 0.91–1.02 in the same runs. A pool opens a connection only when every
// open one is full, which a saturated local simulator also makes happen: there the push without
// latency cost 1.0–1.1 times the CPU per delivery, spread over more connections (docs/decisions.md,
// "More in flight for a gateway 20 ms away").
const DefaultMaxConns = 32

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
