package vivo

import (
	"crypto/tls"
	"errors"
	"time"

	"github.com/pushd/pushd/sender/gateway"
)

// DefaultEndpoint is vivo's push host (gateways.md §6.1).
const DefaultEndpoint = "https://api-push.vivo.com.cn"

// MaxBatch is vivo's limit of regIds per pushToList request.
const MaxBatch = 1000

// DefaultTokenRefresh is how old a cached authToken gets before it is replaced: vivo's tokens
// live 24 h and vivo advises refreshing every 1–2 h (gateways.md §6.1).
const DefaultTokenRefresh = time.Hour

// Config is the process-wide vivo client configuration.
type Config struct {
	// ReceiptURL is the base URL of pushd's receipt endpoints (--receipt-url): each request
	// asks the vendor for delivery receipts there (package receipt). Empty: none asked.
	ReceiptURL string
	// Endpoint overrides vivo's host for every profile that names none (simulators, tests).
	Endpoint string
	gateway.ConnConfig
	// BatchSize is the most regIds per pushToList request (default and maximum 1000).
	BatchSize int
	// Concurrency is the most requests in flight per rendered message and profile (default 8).
	Concurrency int
	// TokenRefresh is the age at which the authToken is renewed (default 1 h).
	TokenRefresh time.Duration
	TLS          *tls.Config
	// Now is the clock of auth timestamps, token ages and TTLs (default time.Now); tests share
	// one with the simulator.
	Now func() time.Time
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
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
	if c.TokenRefresh == 0 {
		c.TokenRefresh = DefaultTokenRefresh
	}
	c.ConnConfig = c.ConnConfig.WithDefaults(gateway.DefaultMaxConns, 8)
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.BatchSize < 0 || c.BatchSize > MaxBatch || c.Concurrency < 0 || c.TokenRefresh < 0 {
		return errors.New("vivo: BatchSize must be within 0..1000, Concurrency and TokenRefresh not negative")
	}
	return c.ConnConfig.Validate("vivo")
}
