package oppo

import (
	"crypto/tls"
	"errors"
	"time"

	"github.com/pushd/pushd/sender/gateway"
)

// OPPO's hosts (gateways.md §7.1): China, and overseas for regIds of other regions.
const (
	DefaultEndpoint     = "https://api.push.oppomobile.com"
	DefaultIntlEndpoint = "https://api-intl.push.oppomobile.com"
)

// MaxBatch is OPPO's limit of messages per unicast_batch request.
const MaxBatch = 1000

// Config is the process-wide OPPO client configuration.
type Config struct {
	// ReceiptURL is the base URL of pushd's receipt endpoints (--receipt-url): each request
	// asks the vendor for delivery receipts there (package receipt). Empty: none asked.
	ReceiptURL string
	// Endpoint and IntlEndpoint override OPPO's China and overseas hosts for every profile
	// that names none (simulators, tests).
	Endpoint     string
	IntlEndpoint string
	gateway.ConnConfig
	// BatchSize is the most regIds per unicast_batch request (default and maximum 1000).
	BatchSize int
	// Concurrency is the most requests in flight per rendered message and profile (default 8).
	Concurrency int
	// TokenRefresh is the age at which the auth_token (valid 24 h) is renewed (default 1 h).
	TokenRefresh time.Duration
	// InvalidRegIDCodes are the business codes (10000–20000) OPPO answers for a dead regId:
	// they delete the installation. OPPO's values are unconfirmed (gateways.md §9), so none is
	// assumed: without them such answers fail the target and keep the installation.
	InvalidRegIDCodes []int
	TLS               *tls.Config
	// Now is the clock of auth timestamps, token ages and TTLs (default time.Now).
	Now func() time.Time
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.IntlEndpoint == "" {
		c.IntlEndpoint = DefaultIntlEndpoint
	}
	if c.BatchSize == 0 {
		c.BatchSize = MaxBatch
	}
	if c.Concurrency == 0 {
		c.Concurrency = 8
	}
	if c.TokenRefresh == 0 {
		c.TokenRefresh = time.Hour
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.ConnConfig = c.ConnConfig.WithDefaults(gateway.DefaultMaxConns, 8)
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.BatchSize < 0 || c.BatchSize > MaxBatch || c.Concurrency < 0 || c.TokenRefresh < 0 {
		return errors.New("oppo: BatchSize must be within 0..1000, Concurrency and TokenRefresh not negative")
	}
	for _, code := range c.InvalidRegIDCodes {
		if code < 10000 || code > 20000 {
			return errors.New("oppo: invalid-regId codes are OPPO business codes, 10000 to 20000")
		}
	}
	return c.ConnConfig.Validate("oppo")
}
