package gateway

import (
	"errors"
	"testing"
	"time"
)

func TestGatewayConnsGrowOnlyWhenSaturated(t *testing.T) {
	dials, closes := 0, 0
	c := NewConns(3, 2, func() (int, error) { dials++; return dials, nil }, func(int) { closes++ })
	var held []*Conn[int]
	acquire := func() *Conn[int] {
		cn, err := c.Acquire()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, cn)
		return cn
	}
	acquire()
	acquire()
	if c.Len() != 1 {
		t.Fatalf("2 requests at 2 streams per connection: %d connections", c.Len())
	}
	if cn := acquire(); cn.C != 2 || c.Len() != 2 {
		t.Fatalf("third request went to connection %d of %d", cn.C, c.Len())
	}
	for range 10 {
		acquire()
	}
	if c.Len() != 3 {
		t.Fatalf("%d connections, want the max 3", c.Len())
	}
	for _, cn := range held {
		cn.Release()
	}
	if cn := acquire(); cn.inflight.Load() != 1 {
		t.Fatalf("least-loaded pick: in flight %d", cn.inflight.Load())
	}
	c.Close()
	if closes != 3 {
		t.Fatalf("closed %d of 3", closes)
	}
	if _, err := c.Acquire(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
}

func TestGatewayParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := func(v string, want time.Duration) {
		t.Helper()
		if got := ParseRetryAfter(v, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
	f("", 0)
	f("120", 2*time.Minute)
	f("-3", 0)
	f("soon", 0)
	f(now.Add(90*time.Second).Format("Mon, 02 Jan 2006 15:04:05 GMT"), 90*time.Second)
	f(now.Add(-time.Minute).Format("Mon, 02 Jan 2006 15:04:05 GMT"), 0)
}
