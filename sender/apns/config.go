package apns

import (
	"crypto/tls"
	"fmt"

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
	// Transport is the HTTP/2 client: TransportLean (sender/h2, the default) or TransportAPNs2;
	// see docs/decisions.md, "Lean APNs transport".
	Transport string
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
	if c.Transport == "" {
		c.Transport = DefaultTransport
	}
	c.ConnConfig = c.ConnConfig.WithDefaults(gateway.DefaultMaxConns, 500)
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch c.Transport {
	case "", TransportAPNs2, TransportLean:
	default:
		return fmt.Errorf("apns: unknown transport %q: want %s or %s", c.Transport, TransportLean, TransportAPNs2)
	}
	return c.ConnConfig.Validate("apns")
}
