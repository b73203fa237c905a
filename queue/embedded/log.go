// Package embedded owns the single-machine durable log: queue.Log kept inside the store's
// Pebble DB under keys starting with 'q' (0x71), which the store never writes.
//
// Append is durable when it returns (one synced Pebble batch per call; Pebble's commit
// pipeline shares one fsync among concurrent synced batches, so concurrent appenders
// group-commit). Offsets are per (topic, partition), start at 0 and only increase; a failed
// Append may leave a gap, never a reordering.
//
// Consumers: every Consume call with the same (topic, group) in this process is a member of
// the group; the group's partitions are split round-robin among its members and move when a
// member joins or leaves. Each owned partition has one goroutine that hands messages to the
// handler in offset order, one at a time, waits for new appends on a channel Append closes
// (no polling), commits the next offset after each handled message and retries a failing
// message with backoff. Delivery is at least once: a message whose handler did not return nil
// before its partition moved is handed again to the new owner. Commits are visible to the
// next owner at once; they are fsynced once per read batch (Options.FetchBatch), before a
// failing message is retried and when a partition goroutine stops, so a crash (not a
// rebalance or Close) may hand again at most FetchBatch messages per partition.
//
// A background trimmer deletes, per partition, the messages below the smallest committed
// offset of the groups known for the topic (groups with committed offsets in the DB or
// members in this process). A group that never comes back therefore holds the log; a group
// that first joins after a trim starts at the oldest message still kept. Trimming never
// lowers the next offset: Open recovers it above every committed offset and the trim floor,
// so a partition the trimmer emptied goes on from where it was (see recoverTopic).
//
// All methods are safe for concurrent use. The Log does not own the DB: close the Log (which
// stops every consumer) before closing the DB.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"

	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/internal/backoff"
)

// ErrClosed is returned by Append and Consume after Close.
var ErrClosed = errors.New("queue log is closed")

// Options configure a Log. The zero value is usable.
type Options struct {
	// Partitions per topic; nil means queue.DefaultPartitions. Topics not listed are rejected.
	// Changing a count between runs of the same DB is not supported (partitions would be
	// orphaned or added empty; no data moves).
	Partitions map[string]int
	// Logger for consumer errors; nil means no logging.
	Logger *zap.Logger
	// MinBackoff and MaxBackoff bound the wait before a failed message is handed again
	// (defaults 50ms and 5s).
	MinBackoff, MaxBackoff time.Duration
	// TrimInterval is how often committed messages are deleted (default 30s; negative
	// disables the background trimmer).
	TrimInterval time.Duration
	// FetchBatch is how many messages a partition goroutine reads per iterator (default 256);
	// it bounds the memory a partition holds.
	FetchBatch int
	// Metrics receives the log's metrics (per topic); nil means a private set. A set serves
	// one Log.
	Metrics *metrics.Set
}

// topicMetrics are the metrics of one topic.
type topicMetrics struct {
	// trimmed counts the offsets the trimmer deleted (messages, and the rare gaps of failed
	// Appends).
	trimmed *metrics.Counter
	// rewound counts the messages Open found below a group's committed offset and handed
	// again (see recoverTopic); anything but 0 calls for a look at the logs.
	rewound *metrics.Counter
}

// Log is the embedded queue.Log.
type Log struct {
	db     *pebble.DB
	log    *zap.Logger
	retry  backoff.Policy
	batch  int
	topics map[string]*topic // immutable after Open

	mu     sync.Mutex // guards groups, closed and wg.Add
	groups map[groupKey]*group
	closed bool
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup

	trimMu  sync.Mutex               // serializes trims
	metrics map[string]*topicMetrics // per topic; immutable after Open
}

type topic struct {
	name  string
	parts []*partition
}

// partition tracks offset assignment and visibility of one (topic, partition).
type partition struct {
	id int

	// floor: every offset below was trimmed (or never held a message). Written under
	// Log.trimMu, read by the retained-messages gauge.
	floor atomic.Int64

	mu       sync.Mutex
	next     int64         // next offset to assign
	inflight []int64       // first offsets of Appends assigned but not yet applied, ascending
	visible  int64         // every offset below is applied (or lost to a failed Append)
	changed  chan struct{} // closed and replaced whenever visible advances
}

// Open recovers the next offset of every partition (see recoverTopic) and starts the trimmer.
func Open(db *pebble.DB, opts Options) (*Log, error) {
	parts := opts.Partitions
	if parts == nil {
		parts = queue.DefaultPartitions
	}
	l := &Log{
		db:      db,
		log:     opts.Logger,
		retry:   backoff.Policy{Min: opts.MinBackoff, Max: opts.MaxBackoff},
		batch:   opts.FetchBatch,
		topics:  make(map[string]*topic, len(parts)),
		groups:  make(map[groupKey]*group),
		done:    make(chan struct{}),
		metrics: make(map[string]*topicMetrics, len(parts)),
	}
	if l.log == nil {
		l.log = zap.NewNop()
	}
	l.log = l.log.Named("queue")
	if l.batch <= 0 {
		l.batch = 256
	}
	set := opts.Metrics
	if set == nil {
		set = metrics.NewSet()
	}
	for name, n := range parts {
		if err := checkName("topic", name); err != nil {
			return nil, fmt.Errorf("cannot open queue log: %w", err)
		}
		if n <= 0 {
			return nil, fmt.Errorf("cannot open queue log: topic %s has %d partitions", name, n)
		}
		label := fmt.Sprintf("{topic=%q}", name)
		m := &topicMetrics{
			trimmed: set.NewCounter("pushd_queue_trimmed_messages_total" + label),
			rewound: set.NewCounter("pushd_queue_rewound_messages_total" + label),
		}
		t, err := l.recoverTopic(name, n, m)
		if err != nil {
			return nil, fmt.Errorf("cannot open queue log: %w", err)
		}
		l.topics[name] = t
		l.metrics[name] = m
		set.NewGauge("pushd_queue_retained_messages"+label, t.retained)
	}
	interval := opts.TrimInterval
	if interval == 0 {
		interval = 30 * time.Second
	}
	if interval > 0 {
		l.wg.Add(1)
		go l.trimLoop(interval)
	}
	return l, nil
}

// retained is the number of offsets assigned and not yet trimmed in the topic: messages
// waiting for a group or for the next trim (and the rare gaps of failed Appends).
func (t *topic) retained() float64 {
	var n int64
	for _, p := range t.parts {
		floor := p.floor.Load() // before next: a trim only raises it to a committed offset ≤ next
		p.mu.Lock()
		next := p.next
		p.mu.Unlock()
		n += next - floor
	}
	return float64(n)
}

// Partitions returns the partition count of topic, 0 for an unknown topic.
func (l *Log) Partitions(topic string) int {
	if t := l.topics[topic]; t != nil {
		return len(t.parts)
	}
	return 0
}

// Append writes recs in one synced batch. Records of one partition get consecutive offsets in
// the order given. When Append returns nil, every record survives a crash (kill -9 or power
// loss, as far as fsync is honoured).
func (l *Log) Append(ctx context.Context, topicName string, recs ...queue.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cannot append to topic %s: %w", topicName, err)
	}
	p, err := l.Prepare(topicName, recs...)
	if err != nil {
		return err
	}
	// Publish, whether or not the batch applied: a failed Append leaves a gap, and readers
	// must not wait for it forever.
	defer p.Done()
	b := l.db.NewBatchWithSize(p.size)
	p.Write(b)
	err = l.db.Apply(b, pebble.Sync)
	_ = b.Close()
	if err != nil {
		return fmt.Errorf("cannot append %d records to topic %s: %w", len(recs), topicName, err)
	}
	return nil
}

// Prepared is an Append split in three, for a caller that commits the records in a batch of its
// own on the log's DB, so that they are written atomically with its other rows (a push's record
// and its job: internal/jointaccept): Prepare reserves the records' offsets, Write adds them to
// the caller's batch, and Done publishes them once that batch is committed or dropped. The
// records are durable when the batch's commit is synced. Done must be called exactly once,
// whatever happened: until then readers of the partitions wait at the reserved offsets (a batch
// never committed leaves a gap, which they skip).
type Prepared struct {
	l     *Log
	topic string
	recs  []queue.Record
	spans []span
	size  int // bytes the records take in a batch, about
	done  bool
}

// span is one partition's offsets reserved by a Prepared: first to next-1.
type span struct {
	p           *partition
	first, next int64
}

// Prepare reserves offsets for recs (at least one) in topicName's partitions; see Prepared.
func (l *Log) Prepare(topicName string, recs ...queue.Record) (*Prepared, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("cannot prepare an append of no records to topic %s", topicName)
	}
	t := l.topics[topicName]
	if t == nil {
		return nil, fmt.Errorf("cannot append to unknown topic %s", topicName)
	}
	size := 0
	for _, r := range recs {
		if r.Partition < 0 || r.Partition >= len(t.parts) {
			return nil, fmt.Errorf("cannot append to partition %d of topic %s: it has %d partitions",
				r.Partition, topicName, len(t.parts))
		}
		size += 32 + len(topicName) + len(r.Key) + len(r.Value)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("cannot append to topic %s: %w", topicName, ErrClosed)
	}
	l.wg.Add(1) // Close waits for Appends in flight, so the DB can be closed after it
	l.mu.Unlock()
	p := &Prepared{l: l, topic: topicName, recs: recs, size: size, spans: make([]span, 0, 4)}
	// Count per partition, then reserve a range of offsets in each.
	for _, r := range recs {
		if i := p.find(r.Partition); i >= 0 {
			p.spans[i].next++
		} else {
			p.spans = append(p.spans, span{p: t.parts[r.Partition], next: 1})
		}
	}
	for i := range p.spans {
		s := &p.spans[i]
		n := s.next
		s.p.mu.Lock()
		s.first = s.p.next
		s.p.next += n
		s.p.inflight = append(s.p.inflight, s.first)
		s.p.mu.Unlock()
		s.next = s.first
	}
	return p, nil
}

func (p *Prepared) find(partition int) int {
	for i := range p.spans {
		if p.spans[i].p.id == partition {
			return i
		}
	}
	return -1
}

// Write adds the records to b, a batch of the log's DB, at their reserved offsets. Call it once.
func (p *Prepared) Write(b *pebble.Batch) {
	var kb [64]byte
	for _, r := range p.recs {
		s := &p.spans[p.find(r.Partition)]
		key := messageKey(kb[:0], p.topic, r.Partition, s.next)
		s.next++
		// The envelope is written into the batch itself: no copy of the value per record.
		op := b.SetDeferred(len(key), envelopeLen(r.Key, r.Value))
		copy(op.Key, key)
		appendEnvelope(op.Value[:0], r.Key, r.Value)
		_ = op.Finish() // an in-memory batch cannot fail
	}
}

// Done publishes the reserved offsets: readers of the partitions go on past them, reading the
// records if the batch holding them was committed, skipping the gap if not. Later calls do
// nothing.
func (p *Prepared) Done() {
	if p.done {
		return
	}
	p.done = true
	for i := range p.spans {
		p.spans[i].p.done(p.spans[i].first)
	}
	p.l.wg.Done()
}

// done marks the Append that reserved offsets from first as finished and advances visible.
func (p *partition) done(first int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.inflight, first); i >= 0 {
		p.inflight = slices.Delete(p.inflight, i, i+1)
	}
	v := p.next
	if len(p.inflight) > 0 {
		v = p.inflight[0]
	}
	if v > p.visible {
		p.visible = v
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// watch returns the visible offset and a channel closed when it advances.
func (p *partition) watch() (int64, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.visible, p.changed
}

// Close stops every consumer (their Consume calls return nil once their partition goroutines
// exited) and the trimmer, and waits for Appends in flight. It does not close the DB.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	l.mu.Unlock()
	l.wg.Wait()
	return nil
}
