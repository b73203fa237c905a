// Package queuetest owns the contract suite every queue.Log implementation passes (embedded
// Pebble, Kafka through kfake). Run starts subtests that each build their own log; it does
// not run them in parallel.
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/queue"
)

// Topic is the topic the suite uses; Topics is what a factory must configure (topic →
// partitions). Groups used by the suite start with "queuetest-".
const (
	Topic      = "queuetest"
	partitions = 4
)

// Topics to configure in the log under test.
var Topics = map[string]int{Topic: partitions}

// Reopener is the optional capability of a log returned by the factory to be closed and
// opened again on the same backing (the same Pebble directory, the same Kafka cluster), as a
// restarted process would. Reopen closes the receiver. Logs without it skip the reopen tests.
type Reopener interface {
	Reopen(t *testing.T) queue.Log
}

// WithReopen wraps l so that the suite can reopen it with reopen (which must close l and
// whatever backs it, then open a new log on the same data).
func WithReopen(l queue.Log, reopen func(t *testing.T) queue.Log) queue.Log {
	return With(l, Hooks{Reopen: reopen})
}

// timeout bounds every wait of the suite; generous because Kafka rebalances take seconds.
const timeout = 30 * time.Second

// Run runs the contract suite. newLog builds a fresh, empty log (a new directory, a new
// cluster) with Topics configured, a short handler retry backoff, and cleanup registered on t.
func Run(t *testing.T, newLog func(t *testing.T) queue.Log) {
	t.Run("OrderPerPartition", func(t *testing.T) { testOrder(t, newLog(t)) })
	t.Run("HandlerErrorRedelivers", func(t *testing.T) { testRedeliver(t, newLog(t)) })
	t.Run("GroupsIndependent", func(t *testing.T) { testGroups(t, newLog(t)) })
	t.Run("CommittedSurvivesReopen", func(t *testing.T) { testReopen(t, newLog(t)) })
	t.Run("AppendDurable", func(t *testing.T) { testDurable(t, newLog(t)) })
	t.Run("MembersSplitAndTakeOver", func(t *testing.T) { testTakeOver(t, newLog(t)) })
	t.Run("MembersChurn", func(t *testing.T) { testChurn(t, newLog(t)) })
	t.Run("AppendRejectsBadInput", func(t *testing.T) { testBadInput(t, newLog(t)) })
	t.Run("TrimmedReopenAppend", func(t *testing.T) { testTrimmedReopen(t, newLog(t)) })
}

func testBadInput(t *testing.T, l queue.Log) {
	ctx := context.Background()
	for _, p := range []int{-1, partitions} {
		if err := l.Append(ctx, Topic, rec(0, 0), queue.Record{Partition: p}); err == nil {
			t.Errorf("Append to partition %d of %d: no error", p, partitions)
		}
	}
	if err := l.Append(ctx, "queuetest-unknown", rec(0, 0)); err == nil {
		t.Error("Append to an unknown topic: no error")
	}
	if n := l.Partitions("queuetest-unknown"); n != 0 {
		t.Errorf("Partitions of an unknown topic = %d, want 0", n)
	}
	// A rejected Append wrote nothing: the first message consumed is the next good one.
	appendAll(t, l, rec(0, 0))
	c := newCollector()
	consume(t, l, "queuetest-bad", func(_ context.Context, m queue.Message) error { c.add(m); return nil })
	waitfor.True(t, timeout, "the good message", func() bool { return c.count() >= 1 })
	if got, w := c.values(0), want(0, 0, 1); !slices.Equal(got, w) {
		t.Errorf("got %q, want %q", got, w)
	}
}

// rec makes the i-th record of partition p.
func rec(p, i int) queue.Record {
	return queue.Record{Partition: p, Key: fmt.Appendf(nil, "k%d", p), Value: fmt.Appendf(nil, "p%d-%d", p, i)}
}

// collector records what handlers saw. Safe for concurrent use.
type collector struct {
	mu   sync.Mutex
	seen map[int][]queue.Message // per partition, in delivery order (successful handles only)
}

func newCollector() *collector { return &collector{seen: make(map[int][]queue.Message)} }

func (c *collector) add(m queue.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m.Key = slices.Clone(m.Key)
	m.Value = slices.Clone(m.Value)
	c.seen[m.Partition] = append(c.seen[m.Partition], m)
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ms := range c.seen {
		n += len(ms)
	}
	return n
}

func (c *collector) values(p int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.seen[p] {
		out = append(out, string(m.Value))
	}
	return out
}

// consume runs l.Consume in a goroutine; stop cancels it and waits for it to return.
func consume(t *testing.T, l queue.Log, group string, h queue.Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Consume(ctx, Topic, group, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("Consume returned %v", err)
				}
			case <-time.After(timeout):
				t.Errorf("Consume did not return within %s of its ctx ending", timeout)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// ExpectValues consumes topic of l in group and requires the values it reads first to be want,
// in order, each within the suite's timeout; the consumer is stopped before it returns.
func ExpectValues(t *testing.T, l queue.Log, topic, group string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Consume(ctx, topic, group, func(ctx context.Context, m queue.Message) error {
			select {
			case got <- string(m.Value):
			case <-ctx.Done():
			}
			return nil
		})
	}()
	defer func() { cancel(); <-done }()
	for _, w := range want {
		select {
		case v := <-got:
			if v != w {
				t.Fatalf("read %q from topic %s, want %q", v, topic, w)
			}
		case <-time.After(timeout):
			t.Fatalf("%q not read from topic %s within %s", w, topic, timeout)
		}
	}
}

func appendAll(t *testing.T, l queue.Log, recs ...queue.Record) {
	t.Helper()
	if err := l.Append(context.Background(), Topic, recs...); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func want(p, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, string(rec(p, i).Value))
	}
	return out
}

func testOrder(t *testing.T, l queue.Log) {
	if got := l.Partitions(Topic); got != partitions {
		t.Fatalf("Partitions(%q) = %d, want %d", Topic, got, partitions)
	}
	const n = 20
	// Mixed batches: one Append carrying every partition, then single-record Appends.
	var batch []queue.Record
	for p := range partitions {
		for i := range n / 2 {
			batch = append(batch, rec(p, i))
		}
	}
	appendAll(t, l, batch...)
	for i := n / 2; i < n; i++ {
		for p := range partitions {
			appendAll(t, l, rec(p, i))
		}
	}
	c := newCollector()
	consume(t, l, "queuetest-order", func(_ context.Context, m queue.Message) error {
		c.add(m)
		return nil
	})
	waitfor.True(t, timeout, "every message consumed", func() bool { return c.count() >= partitions*n })
	for p := range partitions {
		if got, w := c.values(p), want(p, 0, n); !slices.Equal(got, w) {
			t.Errorf("partition %d: got %q, want %q", p, got, w)
		}
		c.mu.Lock()
		for i, m := range c.seen[p] {
			if m.Topic != Topic || m.Partition != p || string(m.Key) != fmt.Sprintf("k%d", p) {
				t.Errorf("partition %d message %d: got topic %q partition %d key %q", p, i, m.Topic, m.Partition, m.Key)
			}
			if i > 0 && m.Offset <= c.seen[p][i-1].Offset {
				t.Errorf("partition %d: offset %d after %d", p, m.Offset, c.seen[p][i-1].Offset)
			}
		}
		c.mu.Unlock()
	}
	// New appends reach a consumer already waiting.
	appendAll(t, l, rec(0, n))
	waitfor.True(t, timeout, "message appended while consuming", func() bool { return c.count() == partitions*n+1 })
}

func testRedeliver(t *testing.T, l queue.Log) {
	const n = 5
	for i := range n {
		appendAll(t, l, rec(1, i))
	}
	c := newCollector()
	var mu sync.Mutex
	attempts := map[string]int{}
	consume(t, l, "queuetest-redeliver", func(_ context.Context, m queue.Message) error {
		mu.Lock()
		attempts[string(m.Value)]++
		a := attempts[string(m.Value)]
		mu.Unlock()
		if string(m.Value) == string(rec(1, 2).Value) && a <= 2 {
			return errors.New("refused on purpose")
		}
		c.add(m)
		return nil
	})
	waitfor.True(t, timeout, "every message consumed", func() bool { return c.count() >= n })
	if got, w := c.values(1), want(1, 0, n); !slices.Equal(got, w) {
		t.Errorf("got %q, want %q (a failed message must be handed again before the next)", got, w)
	}
	mu.Lock()
	defer mu.Unlock()
	if a := attempts[string(rec(1, 2).Value)]; a != 3 {
		t.Errorf("failed message handed %d times, want 3", a)
	}
}

func testGroups(t *testing.T, l queue.Log) {
	const n = 10
	for i := range n {
		for p := range partitions {
			appendAll(t, l, rec(p, i))
		}
	}
	a, b := newCollector(), newCollector()
	consume(t, l, "queuetest-a", func(_ context.Context, m queue.Message) error { a.add(m); return nil })
	consume(t, l, "queuetest-b", func(_ context.Context, m queue.Message) error { b.add(m); return nil })
	waitfor.True(t, timeout, "both groups got everything", func() bool {
		return a.count() >= n*partitions && b.count() >= n*partitions
	})
	for p := range partitions {
		if got, w := a.values(p), want(p, 0, n); !slices.Equal(got, w) {
			t.Errorf("group a partition %d: got %q, want %q", p, got, w)
		}
		if got, w := b.values(p), want(p, 0, n); !slices.Equal(got, w) {
			t.Errorf("group b partition %d: got %q, want %q", p, got, w)
		}
	}
}

func reopen(t *testing.T, l queue.Log) queue.Log {
	r, ok := l.(Reopener)
	if !ok {
		t.Skip("log does not implement queuetest.Reopener")
	}
	return r.Reopen(t)
}

func testReopen(t *testing.T, l queue.Log) {
	if _, ok := l.(Reopener); !ok {
		t.Skip("log does not implement queuetest.Reopener")
	}
	const n = 10
	for i := range n {
		appendAll(t, l, rec(2, i))
	}
	const group = "queuetest-reopen"
	c := newCollector()
	reached := make(chan struct{})
	var once sync.Once
	stop := consume(t, l, group, func(_ context.Context, m queue.Message) error {
		if string(m.Value) == string(rec(2, 5).Value) {
			once.Do(func() { close(reached) })
			return errors.New("stop here: message 5 stays uncommitted")
		}
		c.add(m)
		return nil
	})
	select {
	case <-reached:
	case <-time.After(timeout):
		t.Fatal("message 5 never handed")
	}
	stop()
	if got, w := c.values(2), want(2, 0, 5); !slices.Equal(got, w) {
		t.Fatalf("before reopen: got %q, want %q", got, w)
	}

	l = reopen(t, l)
	appendAll(t, l, rec(2, n))
	c2 := newCollector()
	consume(t, l, group, func(_ context.Context, m queue.Message) error { c2.add(m); return nil })
	waitfor.True(t, timeout, "the rest consumed after reopen", func() bool { return c2.count() >= n+1-5 })
	if got, w := c2.values(2), want(2, 5, n+1); !slices.Equal(got, w) {
		t.Errorf("after reopen: got %q, want %q (resume right after the committed offset)", got, w)
	}
}

func testDurable(t *testing.T, l queue.Log) {
	if _, ok := l.(Reopener); !ok {
		t.Skip("log does not implement queuetest.Reopener")
	}
	const n = 8
	for i := range n {
		appendAll(t, l, rec(3, i), rec(0, i))
	}
	l = reopen(t, l)
	c := newCollector()
	consume(t, l, "queuetest-durable", func(_ context.Context, m queue.Message) error { c.add(m); return nil })
	waitfor.True(t, timeout, "every appended message after reopen", func() bool { return c.count() >= 2*n })
	for _, p := range []int{0, 3} {
		if got, w := c.values(p), want(p, 0, n); !slices.Equal(got, w) {
			t.Errorf("partition %d: got %q, want %q", p, got, w)
		}
	}
	// Offsets keep increasing after a reopen.
	appendAll(t, l, rec(3, n))
	waitfor.True(t, timeout, "message appended after reopen", func() bool { return c.count() == 2*n+1 })
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := c.seen[3]
	if last, prev := ms[len(ms)-1].Offset, ms[len(ms)-2].Offset; last <= prev {
		t.Errorf("offset after reopen %d, not above %d", last, prev)
	}
}

// member is one group member of testTakeOver.
type member struct {
	c       *collector
	mu      sync.Mutex
	refuse  bool // when set, the handler fails every message (they stay uncommitted)
	refused int
}

func (m *member) handle(_ context.Context, msg queue.Message) error {
	m.mu.Lock()
	if m.refuse {
		m.refused++
		m.mu.Unlock()
		return errors.New("refused on purpose")
	}
	m.mu.Unlock()
	m.c.add(msg)
	return nil
}

func testTakeOver(t *testing.T, l queue.Log) {
	const group = "queuetest-members"
	a := &member{c: newCollector()}
	b := &member{c: newCollector()}
	consume(t, l, group, a.handle)
	stopB := consume(t, l, group, b.handle)

	appended := 0
	round := func() {
		var recs []queue.Record
		for p := range partitions {
			recs = append(recs, rec(p, appended))
		}
		appended++
		appendAll(t, l, recs...)
	}
	// Keep appending rounds until both members have handled messages: joining (a Kafka
	// rebalance) takes a while and the first member may own everything until it settles.
	deadline := time.Now().Add(timeout)
	for a.c.count() == 0 || b.c.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("members never both got messages: a %d, b %d", a.c.count(), b.c.count())
		}
		round()
		waitfor.True(t, timeout, "round consumed", func() bool { return a.c.count()+b.c.count() >= appended*partitions })
	}
	// Both members own partitions now. b stops committing, holds messages, then leaves.
	b.mu.Lock()
	b.refuse = true
	b.mu.Unlock()
	round()
	round()
	waitfor.True(t, timeout, "b refused a message", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.refused > 0
	})
	stopB()
	round()

	// Every appended message was handled successfully by someone: a has what b refused.
	all := func() bool {
		for p := range partitions {
			got := map[string]bool{}
			for _, v := range a.c.values(p) {
				got[v] = true
			}
			for _, v := range b.c.values(p) {
				got[v] = true
			}
			for _, v := range want(p, 0, appended) {
				if !got[v] {
					return false
				}
			}
		}
		return true
	}
	waitfor.True(t, timeout, "a handled every message b left uncommitted", all)
	b.mu.Lock()
	defer b.mu.Unlock()
	t.Logf("%d rounds of %d partitions; a handled %d, b handled %d and refused %d",
		appended, partitions, a.c.count(), b.c.count(), b.refused)
}

// testChurn has members join and leave one after another while messages are appended; in the
// end every message was handled successfully at least once.
func testChurn(t *testing.T, l queue.Log) {
	const group = "queuetest-churn"
	all := newCollector()
	start := func() (stop func()) {
		return consume(t, l, group, func(_ context.Context, m queue.Message) error {
			all.add(m)
			return nil
		})
	}
	appended := 0
	round := func() {
		var recs []queue.Record
		for p := range partitions {
			recs = append(recs, rec(p, appended))
		}
		appended++
		appendAll(t, l, recs...)
	}
	stop := start()
	for range 3 {
		round()
		next := start()
		round()
		stop()
		stop = next
		round()
	}
	waitfor.True(t, timeout, "every message handled", func() bool {
		for p := range partitions {
			got := map[string]bool{}
			for _, v := range all.values(p) {
				got[v] = true
			}
			for _, v := range want(p, 0, appended) {
				if !got[v] {
					return false
				}
			}
		}
		return true
	})
	t.Logf("%d messages, %d handled (the rest are redeliveries after a move)", appended*partitions, all.count())
}
