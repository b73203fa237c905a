package vendor

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// TestBatcherGroupsWaitingDeliveries: while one request of a message is in flight, the
// deliveries arriving meanwhile go out together as the next request, split at the size limit,
// and every caller gets its own reply.
func TestBatcherGroupsWaitingDeliveries(t *testing.T) {
	msg := &push.Message{Channel: push.ChannelHMS}
	release := make(chan struct{})
	started := make(chan int, 10)
	var mu sync.Mutex
	var sizes []int
	b := NewBatcher(3, 1, func(ctx context.Context, m *push.Message, ds []*push.Delivery, out []gateway.Reply) {
		mu.Lock()
		sizes = append(sizes, len(ds))
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			started <- len(ds)
			<-release
		}
		for i, d := range ds {
			out[i] = gateway.Reply{Kind: gateway.KindSent, Reason: d.Target.DeviceID}
		}
	})
	ds := make([]push.Delivery, 6)
	for i := range ds {
		ds[i] = push.Delivery{Message: msg, Target: push.Target{DeviceID: "tok" + strconv.Itoa(i)}}
	}
	got := make([]gateway.Reply, len(ds))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); got[0] = b.Send(context.Background(), &ds[0]) }()
	<-started
	for i := 1; i < len(ds); i++ {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = b.Send(context.Background(), &ds[i]) }()
	}
	waitfor.True(t, 5*time.Second, "five deliveries waiting", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.groups[msg].waiting) == 5
	})
	close(release)
	wg.Wait()
	for i, r := range got {
		if r.Kind != gateway.KindSent || r.Reason != ds[i].Target.DeviceID {
			t.Fatalf("reply %d = %+v, want sent for its own token", i, r)
		}
	}
	if want := []int{1, 3, 2}; !equalInts(sizes, want) {
		t.Fatalf("request sizes %v, want %v", sizes, want)
	}
	if b.Requests() != 3 || b.Targets() != 6 || len(b.groups) != 0 {
		t.Fatalf("requests %d targets %d groups %d, want 3, 6, 0", b.Requests(), b.Targets(), len(b.groups))
	}
}

// TestBatcherCanceledWhileWaiting: a delivery whose caller gives up while it waits leaves the
// queue with a canceled retry and is not sent.
func TestBatcherCanceledWhileWaiting(t *testing.T) {
	msg := &push.Message{}
	release := make(chan struct{})
	started := make(chan struct{})
	var sent []string
	b := NewBatcher(10, 1, func(ctx context.Context, m *push.Message, ds []*push.Delivery, out []gateway.Reply) {
		if len(sent) == 0 {
			close(started)
			<-release
		}
		for i, d := range ds {
			sent = append(sent, d.Target.DeviceID)
			out[i] = gateway.Reply{Kind: gateway.KindSent}
		}
	})
	d1 := &push.Delivery{Message: msg, Target: push.Target{DeviceID: "a"}}
	d2 := &push.Delivery{Message: msg, Target: push.Target{DeviceID: "b"}}
	done := make(chan gateway.Reply)
	go func() { done <- b.Send(context.Background(), d1) }()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	r2 := make(chan gateway.Reply)
	go func() { r2 <- b.Send(ctx, d2) }()
	waitfor.True(t, 5*time.Second, "b waiting", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.groups[msg].waiting) == 1
	})
	cancel()
	if r := <-r2; r.Kind != gateway.KindRetry || r.Reason != "canceled" {
		t.Fatalf("canceled waiter got %+v", r)
	}
	close(release)
	if r := <-done; r.Kind != gateway.KindSent {
		t.Fatalf("first got %+v", r)
	}
	if len(sent) != 1 || sent[0] != "a" {
		t.Fatalf("sent %v, want only a", sent)
	}
}

// TestBatcherRequestOutlivesOneCaller: a request carrying deliveries of two Send calls is not
// aborted when one of them gives up; it is when both have.
func TestBatcherRequestOutlivesOneCaller(t *testing.T) {
	c1, cancel1 := context.WithCancel(context.Background())
	c2, cancel2 := context.WithCancel(context.Background())
	ctx, release := whileAnyLive([]*call{{ctx: c1}, {ctx: c2}})
	defer release()
	cancel1()
	if ctx.Err() != nil {
		t.Fatal("request context ended with one caller still live")
	}
	cancel2()
	<-ctx.Done()
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
