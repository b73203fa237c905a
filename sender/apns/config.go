package apns

import (
	"crypto/tls"

	"github.com/sideshow/apns2"

	"github.com/pushd/pushd/sender/gateway"
)

// Config is the process-wide APNs client configuration. Per-app credentials and endpoint
// overrides live in the app's credentials JSON (see CredentialsJSON).
type Config struct {
	// ProdEndpoint and DevEndpoint override Apple's hosts for every app whose credentials do not
	// name their own endpoint (simulators, tests). Empty: api.push.apple.com /
	// api.sandbox.push.apple.com.
	ProdEndpoint string
	DevEndpoint  string
	// ConnConfig: connections and timeouts. StreamsPerConn defaults to 500, the
	// concurrent-stream figure APNs has been observed to advertise (the transport still honours
	// the live SETTINGS_MAX_CONCURRENT_STREAMS).
	gateway.ConnConfig
	// TLS is the base client TLS configuration (nil: system roots). Tests set the simulator's
	// ClientTLS() here; client certificates are added per credential.
	TLS *tls.Config
}

// DefaultMaxConns is APNs's default ConnConfig.MaxConns: at 500 streams each, 4,000 deliveries
// in flight. The other gateways' 4 (gateway.DefaultMaxConns, 2,000 in flight) held a push that
// ran at 60–80k deliveries/s without latency to 48–62k/s when every answer took 20 ms (and longer
// under load), while h2load on 4,000 streams reached 65–73k/s against the same simulator; 8 gave
// the higher rate under latency in the same runs (docs/decisions.md, "More in flight for a
// gateway 20 ms away"). A pool opens a connection only when every open one is full.
const DefaultMaxConns = 8

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.ProdEndpoint == "" {
		c.ProdEndpoint = apns2.HostProduction
	}
	if c.DevEndpoint == "" {
		c.DevEndpoint = apns2.HostDevelopment
	}
	c.ConnConfig = c.ConnConfig.WithDefaults(DefaultMaxConns, 500)
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	return c.ConnConfig.Validate("apns")
}
