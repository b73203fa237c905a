package honor

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pushd/pushd/sender/gateway"
)

// Honor's hosts (docs/vendors.md, Honor).
const (
	DefaultEndpoint = "https://push-api.cloud.honor.com"
	DefaultTokenURL = "https://iam.developer.honor.com/auth/token"
)

// MaxBatch is the most tokens per request: Honor's limit is unconfirmed, HMS's (1000, 80300010
// beyond it) is assumed.
const MaxBatch = 1000

// Config is the process-wide Honor client configuration; per-app credentials (and their own
// endpoint overrides) live in the app's credentials JSON.
type Config struct {
	// Endpoint and TokenURL override Honor's for every profile that does not name its own
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
	// QuotaCodes are the result codes that mean the app's daily quota is spent (QUOTA: the
	// app+vendor is parked until the day ends). Honor's code is unconfirmed, so none is assumed;
	// --sim trusts the simulator's.
	QuotaCodes []string
	// TLS is the base client TLS configuration (nil: system roots); tests set the simulator's.
	TLS *tls.Config
	// Now is the clock of timestamps, token ages and TTLs (default time.Now); tests share
	// theirs with the simulator.
	Now func() time.Time
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
	if c.Now == nil {
		c.Now = time.Now
	}
	c.ConnConfig = c.ConnConfig.WithDefaults(gateway.DefaultMaxConns, 8)
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.BatchSize < 0 || c.BatchSize > MaxBatch || c.Concurrency < 0 {
		return errors.New("honor: BatchSize must be within 0..1000 and Concurrency not negative")
	}
	for _, q := range c.QuotaCodes {
		if _, known := codes[q]; known || q == "" || slices.Contains([]string{CodeOK, CodeSuccess, CodePartial}, q) {
			return fmt.Errorf("honor: quota code %q is empty or a code with another meaning", q)
		}
	}
	return c.ConnConfig.Validate("honor")
}
