package mi

import (
	"crypto/tls"
	"errors"

	"github.com/pushd/pushd/sender/gateway"
)

// Xiaomi's hosts by region (gateways.md §4.1); a profile's "region" picks one.
var Hosts = map[string]string{
	"":       "https://api.xmpush.xiaomi.com",
	"china":  "https://api.xmpush.xiaomi.com",
	"global": "https://api.xmpush.global.xiaomi.com",
	"ru":     "https://ru-api.xmpush.global.xiaomi.com",
	"in":     "https://idmb-api.xmpush.global.xiaomi.com",
	"eu":     "https://fr-api.xmpush.global.xiaomi.com",
	"sgp":    "https://sgp-api.xmpush.global.xiaomi.com",
}

// MaxBatch is Xiaomi's limit of regIds per request.
const MaxBatch = 1000

// Config is the process-wide Xiaomi client configuration.
type Config struct {
	// ReceiptURL is the base URL of pushd's receipt endpoints (--receipt-url): each request
	// asks the vendor for delivery receipts there (package receipt). Empty: none asked.
	ReceiptURL string
	// Endpoint overrides the region's host for every profile that names no endpoint
	// (simulators, tests).
	Endpoint string
	gateway.ConnConfig
	// BatchSize is the most regIds per request (default and maximum 1000).
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
		return errors.New("mi: BatchSize must be within 0..1000 and Concurrency not negative")
	}
	return c.ConnConfig.Validate("mi")
}
