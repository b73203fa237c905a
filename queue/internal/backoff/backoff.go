// Package backoff retries a handler with capped exponential backoff and jitter, for the log
// implementations of queue/. It starts no goroutines; Retry blocks its caller.
package backoff

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Policy is the delay range of a retry loop: the first retry waits about Min, each next one
// twice as long, never more than Max. Zero fields take the defaults below.
type Policy struct {
	Min, Max time.Duration
}

// Defaults: a handler error is usually a downstream outage (store, gateway pool stopped), so
// retry quickly once, then settle at a few seconds so a broken partition does not spin.
const (
	DefaultMin = 50 * time.Millisecond
	DefaultMax = 5 * time.Second
)

// Delay is the wait before retry number attempt (1-based), with ±25% jitter.
func (p Policy) Delay(attempt int) time.Duration {
	lo, hi := p.Min, p.Max
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi <= 0 {
		hi = DefaultMax
	}
	if hi < lo {
		hi = lo
	}
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	jitter := time.Duration(rand.Int64N(int64(d)/2 + 1))
	return d - d/4 + jitter
}

// Permanent wraps err so that Retry returns it at once instead of retrying.
func Permanent(err error) error { return permanent{err} }

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Retry calls f until it returns nil, waiting Delay(attempt) between calls. It returns nil
// once f succeeded, the error f wrapped with Permanent, or ctx.Err() when ctx ends first (f
// is not called again after that). onErr, if not nil, sees every error of f with its attempt
// number (for logging and metrics).
func Retry(ctx context.Context, p Policy, f func() error, onErr func(attempt int, err error)) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := f()
		if err == nil {
			return nil
		}
		var perm permanent
		if errors.As(err, &perm) {
			return perm.err
		}
		if onErr != nil {
			onErr(attempt, err)
		}
		d := p.Delay(attempt)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// Wait blocks for d or until ctx ends, returning ctx.Err() in the latter case.
func Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
