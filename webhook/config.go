package webhook

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Config tunes the dispatcher.
type Config struct {
	// Buffer bounds the events held in memory (waiting for their batch, or for the receiver);
	// an event emitted while it is full is dropped and counted.
	Buffer int
	// BatchSize is the most events in one request; FlushEvery is the longest an event waits
	// for its batch to fill.
	BatchSize  int
	FlushEvery time.Duration
	// Timeout bounds one request; RetryMin and RetryMax bound the exponential backoff between
	// the attempts of a batch the receiver did not take.
	Timeout  time.Duration
	RetryMin time.Duration
	RetryMax time.Duration
	// HookTTL is how long an app's webhook settings are used before they are read again.
	HookTTL time.Duration
}

// Defaults.
const (
	DefaultBuffer     = 100_000
	DefaultBatchSize  = 100
	DefaultFlushEvery = time.Second
	DefaultTimeout    = 10 * time.Second
	DefaultRetryMin   = time.Second
	DefaultRetryMax   = 5 * time.Minute
	DefaultHookTTL    = 10 * time.Second
)

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Buffer == 0 {
		c.Buffer = DefaultBuffer
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.FlushEvery == 0 {
		c.FlushEvery = DefaultFlushEvery
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.RetryMin == 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.HookTTL == 0 {
		c.HookTTL = DefaultHookTTL
	}
	return c
}

// Validate checks a config as given (cmd/pushd: the flags' values).
func (c Config) Validate() error {
	var errs []error
	if c.Buffer < 1 {
		errs = append(errs, fmt.Errorf("--webhook-buffer %d must be at least 1", c.Buffer))
	}
	if c.BatchSize < 1 || c.BatchSize > 1000 {
		errs = append(errs, fmt.Errorf("--webhook-batch %d must be 1 to 1000", c.BatchSize))
	}
	if c.FlushEvery < time.Millisecond {
		errs = append(errs, fmt.Errorf("--webhook-flush %s is below 1ms", c.FlushEvery))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("--webhook-timeout must be positive"))
	}
	if c.RetryMin <= 0 || c.RetryMax < c.RetryMin {
		errs = append(errs, fmt.Errorf("--webhook-retry-min %s must be positive and at most --webhook-retry-max %s", c.RetryMin, c.RetryMax))
	}
	if c.HookTTL <= 0 {
		errs = append(errs, errors.New("the webhook settings TTL must be positive"))
	}
	return errors.Join(errs...)
}

// RegisterFlags registers the dispatcher's flags under prefix (cmd/pushd: "webhook-").
func (c *Config) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.IntVar(&c.Buffer, prefix+"buffer", DefaultBuffer, "delivery-event webhooks: events held in memory per node; what does not fit is dropped and counted")
	fs.IntVar(&c.BatchSize, prefix+"batch", DefaultBatchSize, "delivery-event webhooks: most events per request")
	fs.DurationVar(&c.FlushEvery, prefix+"flush", DefaultFlushEvery, "delivery-event webhooks: longest an event waits for its batch to fill")
	fs.DurationVar(&c.Timeout, prefix+"timeout", DefaultTimeout, "delivery-event webhooks: longest request to a receiver")
	fs.DurationVar(&c.RetryMin, prefix+"retry-min", DefaultRetryMin, "delivery-event webhooks: first backoff after a failed request (doubling up to --webhook-retry-max)")
	fs.DurationVar(&c.RetryMax, prefix+"retry-max", DefaultRetryMax, "delivery-event webhooks: longest backoff between the attempts of a batch")
	c.HookTTL = DefaultHookTTL
}
