package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestQueueBackoffDelay(t *testing.T) {
	p := Policy{Min: 100 * time.Millisecond, Max: time.Second}
	for attempt, base := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 50: time.Second} {
		for range 100 {
			d := p.Delay(attempt)
			if lo, hi := base-base/4, base+base/4; d < lo || d > hi {
				t.Fatalf("Delay(%d) = %s, want within [%s, %s]", attempt, d, lo, hi)
			}
		}
	}
}

func TestQueueBackoffRetry(t *testing.T) {
	p := Policy{Min: time.Microsecond, Max: time.Microsecond}
	calls := 0
	err := Retry(context.Background(), p, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}, nil)
	if err != nil || calls != 3 {
		t.Fatalf("Retry = %v after %d calls, want nil after 3", err, calls)
	}

	stop := errors.New("stop")
	calls = 0
	err = Retry(context.Background(), p, func() error { calls++; return Permanent(stop) }, nil)
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("Retry of a permanent error = %v after %d calls", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = Retry(ctx, Policy{Min: time.Hour, Max: time.Hour}, func() error { calls++; cancel(); return errors.New("x") }, nil)
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("Retry after cancel = %v after %d calls", err, calls)
	}
}
