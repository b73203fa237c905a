package vendor

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTokenCacheMintsOnceAndRenews: concurrent callers share one mint; the token is renewed
// once it is refresh old (or RenewBefore its expiry when it lives shorter); Invalidate drops
// only the token it names.
func TestTokenCacheMintsOnceAndRenews(t *testing.T) {
	var mints atomic.Int64
	life := 24 * time.Hour
	c := NewTokenCache(func(context.Context) (string, time.Duration, error) {
		return "tok" + strconv.FormatInt(mints.Add(1), 10), life, nil
	}, time.Hour, time.Second)
	var mu sync.Mutex
	now := time.Now()
	c.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if tok, err := c.Token(context.Background()); err != nil || tok != "tok1" {
				t.Errorf("token %q %v", tok, err)
			}
		}()
	}
	wg.Wait()
	if c.Mints() != 1 {
		t.Fatalf("%d mints for concurrent callers, want 1", c.Mints())
	}
	advance(59 * time.Minute)
	if tok, _ := c.Token(context.Background()); tok != "tok1" {
		t.Fatalf("before the refresh age: %q", tok)
	}
	advance(time.Minute)
	if tok, _ := c.Token(context.Background()); tok != "tok2" {
		t.Fatalf("at the refresh age: %q, want a new token", tok)
	}
	c.Invalidate("tok1") // an old token's refusal drops nothing
	if tok, _ := c.Token(context.Background()); tok != "tok2" {
		t.Fatalf("after a stale refusal: %q", tok)
	}
	c.Invalidate("tok2")
	if tok, _ := c.Token(context.Background()); tok != "tok3" {
		t.Fatalf("after a refusal: %q", tok)
	}
	life = 10 * time.Minute // shorter than refresh: renewed RenewBefore(10m) = 2m before expiry
	c.Invalidate("tok3")
	_, _ = c.Token(context.Background())
	advance(8*time.Minute - time.Second)
	if tok, _ := c.Token(context.Background()); tok != "tok4" {
		t.Fatalf("short-lived token renewed early: %q", tok)
	}
	advance(time.Second)
	if tok, _ := c.Token(context.Background()); tok != "tok5" {
		t.Fatalf("short-lived token not renewed before expiry: %q", tok)
	}
}
