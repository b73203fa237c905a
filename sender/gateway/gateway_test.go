package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestGatewayConnsGrowOnlyWhenSaturated(t *testing.T) {
	dials, closes := 0, 0
	c := NewBoundedConns(3, 2, func() (int, error) { dials++; return dials, nil }, func(int) { closes++ })
	var held []*Conn[int]
	acquire := func() *Conn[int] {
		cn, ok := c.TryAcquire()
		if !ok {
			t.Fatalf("no stream free with %d of 6 held", len(held))
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
	for range 3 {
		acquire()
	}
	if c.Len() != 3 || dials != 3 {
		t.Fatalf("%d connections (%d dials), want the max 3", c.Len(), dials)
	}
	if _, ok := c.TryAcquire(); ok {
		t.Fatal("a seventh request on 3 connections of 2 streams")
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
	if _, err := c.AcquireContext(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("AcquireContext after Close: %v", err)
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

func TestGatewayConnsBoundedNeverOverfillsAConnection(t *testing.T) {
	dials, closes := 0, 0
	c := NewBoundedConns(2, 3, func() (int, error) { dials++; return dials, nil }, func(int) { closes++ })
	var held []*Conn[int]
	for range 6 {
		cn, err := c.AcquireContext(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, cn)
	}
	for _, cn := range held {
		if n := cn.inflight.Load(); n != 3 {
			t.Fatalf("connection %d carries %d requests, want 3", cn.C, n)
		}
	}
	if c.Len() != 2 {
		t.Fatalf("%d connections, want 2", c.Len())
	}
	// Full: a caller waits (here: until its context ends) instead of sharing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.AcquireContext(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireContext on a full set: %v", err)
	}
	got := make(chan *Conn[int])
	go func() {
		cn, err := c.AcquireContext(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- cn
	}()
	held[4].Release()
	if cn := <-got; cn != held[4] {
		t.Fatalf("waiter got connection %d, want the released %d", cn.C, held[4].C)
	}
	waiter := make(chan error)
	go func() {
		_, err := c.AcquireContext(context.Background())
		waiter <- err
	}()
	c.Close()
	if err := <-waiter; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiter after Close: %v", err)
	}
	if closes != 2 {
		t.Fatalf("closed %d of 2", closes)
	}
}

func TestGatewayConnsBoundedConcurrent(t *testing.T) {
	const maxConns, streams = 3, 4
	c := NewBoundedConns(maxConns, streams, func() (int, error) { return 0, nil }, func(int) {})
	defer c.Close()
	var wg sync.WaitGroup
	var over atomic.Int64
	for range 64 {
		wg.Go(func() {
			for range 200 {
				cn, err := c.AcquireContext(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if cn.inflight.Load() > streams {
					over.Add(1)
				}
				cn.Release()
			}
		})
	}
	wg.Wait()
	if n := over.Load(); n > 0 {
		t.Fatalf("%d acquisitions saw a connection above %d requests", n, streams)
	}
	if c.Len() > maxConns {
		t.Fatalf("%d connections, max %d", c.Len(), maxConns)
	}
	if held := maxConns*streams - c.slots.free; held != 0 {
		t.Fatalf("%d slots still held after every release", held)
	}
}

func TestGatewayTransportReplyNamesTheGatewayNotTheURL(t *testing.T) {
	withURL := &url.Error{Op: "Post", URL: "https://gw/3/device/SECRET-TOKEN", Err: errors.New("connection refused")}
	cases := []struct {
		err  error
		want string
	}{
		{context.Canceled, "canceled"},
		{context.DeadlineExceeded, "apns request timed out"},
		{withURL, "cannot reach apns: connection refused"},
		{errors.New("bad json"), "unreadable apns reply"},
		{&url.Error{Op: "Post", URL: "https://gw/3/device/SECRET-TOKEN", Err: io.ErrUnexpectedEOF}, "apns connection lost"},
		{&url.Error{Op: "Post", URL: "https://gw/", Err: errors.New("http2: client connection lost")}, "apns connection lost"},
		{&url.Error{Op: "Post", URL: "https://gw/", Err: errors.New(`http2: server sent GOAWAY and closed the connection; LastStreamID=7, ErrCode=NO_ERROR, debug=""`)}, "apns connection lost"},
		{&url.Error{Op: "Post", URL: "https://gw/", Err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}}, "apns connection lost"},
		{&url.Error{Op: "Post", URL: "https://gw/", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, "cannot reach apns: dial: connection refused"},
	}
	for _, c := range cases {
		r := TransportReply(c.err, "apns", "unreadable apns reply")
		if r.Kind != KindRetry || r.Reason != c.want {
			t.Errorf("TransportReply(%v) = %v %q, want retry %q", c.err, r.Kind, r.Reason, c.want)
		}
	}
}
