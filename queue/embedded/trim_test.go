package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/queuetest"
)

// metricValue reads one series of set (0 when absent).
func metricValue(t *testing.T, set *metrics.Set, series string) float64 {
	t.Helper()
	var b bytes.Buffer
	set.WritePrometheus(&b)
	for line := range strings.Lines(b.String()) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("series %s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// offsets collects the offsets and values a group handles. Safe for concurrent use.
type offsets struct {
	mu   sync.Mutex
	offs []int64
	vals []string
}

func (o *offsets) handle(_ context.Context, m queue.Message) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.offs = append(o.offs, m.Offset)
	o.vals = append(o.vals, string(m.Value))
	return nil
}

func (o *offsets) get() ([]int64, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.offs), slices.Clone(o.vals)
}

// drain runs group on queuetest.Topic until it handled n messages, then stops it (its
// commits are then fsynced) and returns what it handled.
func drain(t *testing.T, l *Log, group string, n int) ([]int64, []string) {
	t.Helper()
	o := &offsets{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Consume(ctx, queuetest.Topic, group, o.handle) }()
	waitfor.True(t, 10*time.Second, fmt.Sprintf("group %s to handle %d messages", group, n), func() bool {
		offs, _ := o.get()
		return len(offs) >= n
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return o.get()
}

func appendValues(t *testing.T, l *Log, p int, vals ...string) {
	t.Helper()
	for _, v := range vals {
		if err := l.Append(context.Background(), queuetest.Topic, queue.Record{Partition: p, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
}

// A partition kept partly by a lagging group, and one emptied, both reopened: the next offset
// continues in each, the lagging group gets the rest and the new, the other only the new.
func TestQueueEmbeddedTrimPartlyThenReopen(t *testing.T) {
	dir := t.TempDir()
	set := metrics.NewSet()
	opts := testOptions()
	opts.Metrics = set
	o := open(t, dir, opts)
	appendValues(t, o.Log, 0, "a0", "a1", "a2", "a3", "a4")
	appendValues(t, o.Log, 1, "b0", "b1")
	drain(t, o.Log, "fast", 7)
	// "slow" handles partition 0 up to offset 2 and all of partition 1.
	slow := &offsets{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- o.Consume(ctx, queuetest.Topic, "slow", func(ctx context.Context, m queue.Message) error {
			if m.Partition == 0 && m.Offset >= 2 {
				return errors.New("not yet")
			}
			return slow.handle(ctx, m)
		})
	}()
	waitfor.True(t, 10*time.Second, "slow to handle 4 messages", func() bool {
		offs, _ := slow.get()
		return len(offs) == 4
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := o.trim(); err != nil {
		t.Fatal(err)
	}
	series := fmt.Sprintf("pushd_queue_trimmed_messages_total{topic=%q}", queuetest.Topic)
	if got := metricValue(t, set, series); got != 4 {
		t.Errorf("%s = %v, want 4 (2 of partition 0, 2 of partition 1)", series, got)
	}
	retained := fmt.Sprintf("pushd_queue_retained_messages{topic=%q}", queuetest.Topic)
	if got := metricValue(t, set, retained); got != 3 {
		t.Errorf("%s = %v, want 3 (offsets 2..4 of partition 0)", retained, got)
	}
	o.close(t)

	set = metrics.NewSet()
	opts.Metrics = set
	o = open(t, dir, opts)
	defer o.close(t)
	if got := metricValue(t, set, retained); got != 3 {
		t.Errorf("after reopen %s = %v, want 3", retained, got)
	}
	appendValues(t, o.Log, 0, "a5")
	appendValues(t, o.Log, 1, "b2")
	offs, vals := drain(t, o.Log, "fast", 2)
	if !slices.Equal(offs, []int64{5, 2}) && !slices.Equal(offs, []int64{2, 5}) {
		t.Errorf("fast after reopen: offsets %v values %v, want 5 (a5) and 2 (b2)", offs, vals)
	}
	offs, vals = drain(t, o.Log, "slow", 5)
	slices.Sort(vals)
	if w := []string{"a2", "a3", "a4", "a5", "b2"}; !slices.Equal(vals, w) {
		t.Errorf("slow after reopen: offsets %v values %v, want %v", offs, vals, w)
	}
	// Trimming after everything was handled empties both partitions, and what the log
	// retains is 0.
	if err := o.trim(); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, set, retained); got != 0 {
		t.Errorf("after the last trim %s = %v, want 0", retained, got)
	}
}

// The trim floor alone holds the next offset: a trimmed partition whose group's commit is
// gone (a damaged DB, a group reset by hand) still continues above what it trimmed, and the
// group reads the new messages from the oldest kept.
func TestQueueEmbeddedTrimFloorHoldsNext(t *testing.T) {
	dir := t.TempDir()
	o := open(t, dir, testOptions())
	appendValues(t, o.Log, 2, "0", "1", "2", "3", "4")
	drain(t, o.Log, "g", 5)
	if err := o.trim(); err != nil {
		t.Fatal(err)
	}
	if err := o.db.Delete(commitKey(nil, queuetest.Topic, "g", 2), nil); err != nil {
		t.Fatal(err)
	}
	o.close(t)

	o = open(t, dir, testOptions())
	defer o.close(t)
	appendValues(t, o.Log, 2, "5")
	offs, vals := drain(t, o.Log, "g", 1)
	if !slices.Equal(offs, []int64{5}) || !slices.Equal(vals, []string{"5"}) {
		t.Errorf("after reopen: offsets %v values %v, want offset 5 value 5", offs, vals)
	}
}

// A DB where an older pushd reused offsets below a group's commit: the partition holds
// messages, all below the committed offset. Open rewinds the group to the oldest message,
// logs an error and counts them, so the group is handed them instead of skipping them; a
// group whose commit is within the partition is left alone.
func TestQueueEmbeddedOpenRewindsCommitBeyondEnd(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	const p = 3
	for off := int64(4); off < 7; off++ { // offsets 0..3 were trimmed
		if err := db.Set(messageKey(nil, queuetest.Topic, p, off), appendEnvelope(nil, nil, []byte(strconv.FormatInt(off, 10))), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Set(commitKey(nil, queuetest.Topic, "ahead", p), offsetValue(10), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Set(commitKey(nil, queuetest.Topic, "within", p), offsetValue(5), nil); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.ErrorLevel)
	set := metrics.NewSet()
	opts := testOptions()
	opts.Logger = zap.New(core)
	opts.Metrics = set
	l, err := Open(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	o := &opened{Log: l, db: db}
	defer o.close(t)

	series := fmt.Sprintf("pushd_queue_rewound_messages_total{topic=%q}", queuetest.Topic)
	if got := metricValue(t, set, series); got != 3 {
		t.Errorf("%s = %v, want 3", series, got)
	}
	if n := logs.FilterField(zap.String("group", "ahead")).Len(); n != 1 || logs.Len() != 1 {
		t.Errorf("%d error lines, %d about group ahead; want 1 about it: %v", logs.Len(), n, logs.All())
	}
	appendValues(t, o.Log, p, "new")
	offs, vals := drain(t, o.Log, "ahead", 4)
	if !slices.Equal(offs, []int64{4, 5, 6, 7}) || !slices.Equal(vals, []string{"4", "5", "6", "new"}) {
		t.Errorf("group ahead: offsets %v values %v, want 4..7 with 4, 5, 6, new", offs, vals)
	}
	offs, vals = drain(t, o.Log, "within", 3)
	if !slices.Equal(offs, []int64{5, 6, 7}) || !slices.Equal(vals, []string{"5", "6", "new"}) {
		t.Errorf("group within: offsets %v values %v, want 5..7 with 5, 6, new", offs, vals)
	}
}
