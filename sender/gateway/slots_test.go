package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
)

func boundedConns(t *testing.T, maxConns, streams int) *Conns[int] {
	t.Helper()
	n := 0
	c := NewBoundedConns(maxConns, streams, func() (int, error) { n++; return n, nil }, func(int) {})
	t.Cleanup(c.Close)
	return c
}

func waiters(c *Conns[int]) int {
	c.slots.mu.Lock()
	defer c.slots.mu.Unlock()
	return len(c.slots.waiters)
}

// TestGatewayAcquireUpToWaitsForSeveral: at the limit, AcquireUpTo is woken only once least
// streams are free, takes up to most, never puts a connection above its streams, and a
// TryAcquire does not jump the queue.
func TestGatewayAcquireUpToWaitsForSeveral(t *testing.T) {
	c := boundedConns(t, 2, 4) // 8 streams
	got, err := c.AcquireUpTo(context.Background(), 1, 8, nil)
	if err != nil || len(got) != 8 {
		t.Fatalf("AcquireUpTo on a free set: %d, %v; want all 8", len(got), err)
	}
	for _, cn := range got {
		if cn.inflight.Load() > 4 {
			t.Fatalf("a connection carries %d, streams 4", cn.inflight.Load())
		}
	}
	type result struct {
		conns []*Conn[int]
		err   error
	}
	done := make(chan result, 1)
	go func() {
		cs, err := c.AcquireUpTo(context.Background(), 3, 5, nil)
		done <- result{cs, err}
	}()
	waitfor.True(t, 10*time.Second, "the batch waiting", func() bool { return waiters(c) == 1 })
	got[0].Release()
	got[1].Release()
	if _, ok := c.TryAcquire(); ok {
		t.Fatal("TryAcquire took a stream a waiter was first for")
	}
	select {
	case r := <-done:
		t.Fatalf("woken with 2 free streams of the 3 it waits for: %d, %v", len(r.conns), r.err)
	default:
	}
	got[2].Release()
	r := <-done
	if r.err != nil || len(r.conns) != 3 {
		t.Fatalf("after a third release: %d, %v; want the 3 free (at most 5)", len(r.conns), r.err)
	}
	for _, cn := range append(r.conns, got[3:]...) {
		cn.Release()
	}
	if c.slots.free != 8 {
		t.Fatalf("%d free after every release, want 8", c.slots.free)
	}
	// least above the capacity is capped, not a wait that can never end.
	if cs, err := c.AcquireUpTo(context.Background(), 100, 100, nil); err != nil || len(cs) != 8 {
		t.Fatalf("AcquireUpTo(100, 100) on 8 streams: %d, %v", len(cs), err)
	}
}

// TestGatewayAcquireUpToCancelAndClose: a waiter whose context ends leaves the queue (the one
// behind it is then served) and takes nothing; Close wakes every waiter with ErrClosed.
func TestGatewayAcquireUpToCancelAndClose(t *testing.T) {
	c := boundedConns(t, 1, 2)
	held, err := c.AcquireUpTo(context.Background(), 2, 2, nil)
	if err != nil || len(held) != 2 {
		t.Fatal(len(held), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := c.AcquireUpTo(ctx, 2, 2, nil); first <- err }()
	waitfor.True(t, 10*time.Second, "the first waiter", func() bool { return waiters(c) == 1 })
	second := make(chan int, 1)
	go func() { cs, _ := c.AcquireUpTo(context.Background(), 1, 1, nil); second <- len(cs) }()
	waitfor.True(t, 10*time.Second, "the second waiter", func() bool { return waiters(c) == 2 })
	held[0].Release() // one free: not enough for the first, which blocks the second
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	if n := <-second; n != 1 {
		t.Fatalf("the waiter behind a cancelled one got %d, want 1", n)
	}
	third := make(chan error, 1)
	go func() { _, err := c.AcquireUpTo(context.Background(), 1, 1, nil); third <- err }()
	waitfor.True(t, 10*time.Second, "the third waiter", func() bool { return waiters(c) == 1 })
	c.Close()
	if err := <-third; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiter at Close: %v, want ErrClosed", err)
	}
	if _, err := c.AcquireContext(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("AcquireContext after Close: %v", err)
	}
}
