package mz

import (
	"crypto/tls"
	"errors"

	"github.com/pushd/pushd/sender/gateway"
)

// DefaultEndpoint is Meizu's push host over HTTPS, as the official Go SDK uses it (the API
// document shows http://server-api-push.meizu.com; which is canonical is unconfirmed,
// gateways.md §9). A profile's or the process's endpoint overrides it.
const DefaultEndpoint = "https://api-push.meizu.com"

// MaxBatch is Meizu's limit of pushIds per request (gateways.md §5.4).
const MaxBatch = 100

// Config is the process-wide Meizu client configuration.
type Config struct {
	// ReceiptURL is the base URL of pushd's receipt endpoints (--receipt-url): each request
	// asks the vendor for delivery receipts there (package receipt). Empty: none asked.
	ReceiptURL string
	// Endpoint overrides DefaultEndpoint for every profile that names no endpoint
	// (simulators, tests).
	Endpoint string
	gateway.ConnConfig
	// BatchSize is the most pushIds per request (default and maximum 100).
	BatchSize int
	// Concurrency is the most requests in flight per rendered message and profile (default 8).
	Concurrency int
	TLS         *tls.Config
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
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
		return errors.New("mz: BatchSize must be within 0..100 and Concurrency not negative")
	}
	return c.ConnConfig.Validate("mz")
}
