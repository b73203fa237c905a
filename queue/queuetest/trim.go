package queuetest

import (
	"context"
	"slices"
	"testing"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/queue"
)

// Trimmer is the optional capability of a log returned by the factory to delete, now, the
// messages its groups have committed, as its own clean-up would (the embedded log's trimmer,
// Kafka's retention or DeleteRecords). The suite calls Trim only when every group has
// committed every message, so an implementation may delete up to the end of each partition.
// Logs without it skip the trim tests.
type Trimmer interface {
	Trim(t *testing.T)
}

// Hooks are the optional capabilities a factory gives the log it returns; a nil hook makes
// the tests that need it skip.
type Hooks struct {
	// Reopen must close the log and whatever backs it, then open a new log on the same data.
	Reopen func(t *testing.T) queue.Log
	// Trim deletes the committed messages (see Trimmer).
	Trim func(t *testing.T)
}

// With wraps l so that the suite can use the hooks (see Reopener and Trimmer).
func With(l queue.Log, h Hooks) queue.Log {
	return hooked{Log: l, h: h}
}

type hooked struct {
	queue.Log
	h Hooks
}

func (x hooked) Reopen(t *testing.T) queue.Log {
	if x.h.Reopen == nil {
		t.Skip("log has no Reopen hook")
	}
	return x.h.Reopen(t)
}

func (x hooked) Trim(t *testing.T) {
	if x.h.Trim == nil {
		t.Skip("log has no Trim hook")
	}
	x.h.Trim(t)
}

func trim(t *testing.T, l queue.Log) {
	t.Helper()
	tr, ok := l.(Trimmer)
	if !ok {
		t.Skip("log does not implement queuetest.Trimmer")
	}
	tr.Trim(t)
}

// testTrimmedReopen is issue 12's lost pushes: two groups consume everything, the clean-up
// deletes every message, the log is reopened (a restart after an idle spell) and new messages
// are appended. They must get offsets above every committed one and reach both groups: a log
// that restarts an emptied partition at offset 0 puts them below the committed offsets, where
// no group reads them.
func testTrimmedReopen(t *testing.T, l queue.Log) {
	if _, ok := l.(Reopener); !ok {
		t.Skip("log does not implement queuetest.Reopener")
	}
	if _, ok := l.(Trimmer); !ok {
		t.Skip("log does not implement queuetest.Trimmer")
	}
	groups := []string{"queuetest-trim-a", "queuetest-trim-b"}
	last := make([]int64, partitions) // per partition, the highest offset handed so far
	for p := range last {
		last[p] = -1
	}
	// phase appends records from..to-1 of every partition (after reopening the log when asked)
	// and checks that each group gets exactly those, at offsets above every earlier one.
	phase := func(name string, from, to int) {
		t.Helper()
		var recs []queue.Record
		for i := from; i < to; i++ {
			for p := range partitions {
				recs = append(recs, rec(p, i))
			}
		}
		appendAll(t, l, recs...)
		high := slices.Clone(last)
		for _, g := range groups {
			c := newCollector()
			stop := consume(t, l, g, func(_ context.Context, m queue.Message) error { c.add(m); return nil })
			waitfor.True(t, timeout, name+": group "+g+" got the new messages", func() bool {
				return c.count() >= (to-from)*partitions
			})
			stop()
			for p := range partitions {
				if got, w := c.values(p), want(p, from, to); !slices.Equal(got, w) {
					t.Errorf("%s: group %s partition %d: got %q, want %q", name, g, p, got, w)
				}
				c.mu.Lock()
				for _, m := range c.seen[p] {
					if m.Offset <= last[p] {
						t.Errorf("%s: group %s partition %d: offset %d, not above %d handed before",
							name, g, p, m.Offset, last[p])
					}
					high[p] = max(high[p], m.Offset)
				}
				c.mu.Unlock()
			}
		}
		last = high
	}
	phase("first messages", 0, 3)
	trim(t, l)
	phase("append after a trim", 3, 4)
	trim(t, l)
	l = reopen(t, l)
	phase("append after a trim and a reopen", 4, 9)
	// And once more: the offsets recovered on the second reopen hold as well.
	trim(t, l)
	l = reopen(t, l)
	phase("append after a second trim and reopen", 9, 10)
}
