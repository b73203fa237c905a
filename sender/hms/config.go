package hms

import (
	"crypto/tls"
	"errors"

	"github.com/pushd/pushd/sender/gateway"
)

// Huawei's hosts (gateways.md §3.1).
const (
	DefaultEndpoint = "https://push-api.cloud.huawei.com"
	DefaultTokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
)

// MaxBatch is HMS's limit of tokens per request (80300010 beyond it).
const MaxBatch = 1000

// Config is the process-wide HMS client configuration; per-app credentials (and their own
// endpoint overrides) live in the app's credentials JSON.
type Config struct {
	// Endpoint and TokenURL override Huawei's for every profile that does not name its own
	// (simulators, tests).
	Endpoint string
	TokenURL string
	// ConnConfig: connections and timeouts. HTTP/2 is used when offered; otherwise
	// MaxConns*StreamsPerConn keep-alive HTTP/1.1 connections are kept (StreamsPerConn default 8).
	gateway.ConnConfig
	// BatchSize is the most tokens per request (default and maximum 1000).
	BatchSize int
	// Concurrency is the most requests in flight per rendered message and profile (default 8);
	// deliveries arriving meanwhile are batched into the next request.
	Concurrency int
	// TLS is the base client TLS configuration (nil: system roots); tests set the simulator's.
	TLS *tls.Config
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.TokenURL == "" {
		c.TokenURL = DefaultTokenURL
	}
	if c.BatchSize == 0 {
		c.BatchSize = MaxBatch
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	c.ConnConfig = c.ConnConfig.WithDefaults(gateway.DefaultMaxConns, 8)
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.BatchSize < 0 || c.BatchSize > MaxBatch || c.Concurrency < 0 {
		return errors.New("hms: BatchSize must be within 0..1000 and Concurrency not negative")
	}
	return c.ConnConfig.Validate("hms")
}
