package kafka

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/queuetest"
)

// owned records the last assignment a member was told.
type owned struct {
	mu    sync.Mutex
	parts []int
	calls int
}

func (o *owned) set(ps []int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.parts, o.calls = slices.Clone(ps), o.calls+1
}

func (o *owned) get() ([]int, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.parts), o.calls
}

// ConsumeAssigned tells each member of a group the partitions it owns: all of them alone,
// a disjoint split once a second member joined, all again once it left.
func TestQueueKafkaConsumeAssigned(t *testing.T) {
	c := newCluster(t)
	cfg := testConfig(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := EnsureTopics(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	all := []int{0, 1, 2, 3}
	if n := queuetest.Topics[queuetest.Topic]; n != len(all) {
		t.Fatalf("the suite's topic has %d partitions; this test expects %d", n, len(all))
	}
	nop := func(context.Context, queue.Message) error { return nil }
	member := func(o *owned) (stop func()) {
		l, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.ConsumeAssigned(mctx, queuetest.Topic, "assigned-test", nop, o.set) }()
		return func() {
			mcancel()
			if err := <-done; err != nil {
				t.Errorf("ConsumeAssigned: %v", err)
			}
			_ = l.Close()
		}
	}
	var a, b owned
	stopA := member(&a)
	defer stopA()
	waitfor.True(t, 20*time.Second, "the first member to own every partition", func() bool {
		p, _ := a.get()
		return slices.Equal(p, all)
	})
	stopB := member(&b)
	waitfor.True(t, 30*time.Second, "two members to split the partitions", func() bool {
		pa, _ := a.get()
		pb, _ := b.get()
		both := slices.Sorted(slices.Values(append(pa, pb...)))
		return len(pa) > 0 && len(pb) > 0 && slices.Equal(both, all)
	})
	stopB()
	waitfor.True(t, 30*time.Second, "the first member to own every partition again", func() bool {
		p, _ := a.get()
		return slices.Equal(p, all)
	})
}
