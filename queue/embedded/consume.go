package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/internal/backoff"
)

type groupKey struct{ topic, group string }

// group is the in-process membership of one consumer group on one topic.
type group struct {
	l    *Log
	t    *topic
	name string

	// mu serializes membership changes and is held while revoked partition goroutines finish
	// (so a partition never has two goroutines). Partition goroutines never take it.
	mu      sync.Mutex
	members []*member // join order
	owners  []*worker // per partition; nil when nobody owns it
}

type member struct {
	ctx context.Context
	h   queue.Handler
}

type worker struct {
	m      *member
	cancel context.CancelFunc
	done   chan struct{}
}

// Consume joins group on topic and hands the messages of the partitions this member owns to
// h until ctx is cancelled or the Log is closed; it then leaves the group (its partitions move
// to the other members), waits for its partition goroutines and returns nil.
func (l *Log) Consume(ctx context.Context, topicName, groupName string, h queue.Handler) error {
	t := l.topics[topicName]
	if t == nil {
		return fmt.Errorf("cannot consume unknown topic %s", topicName)
	}
	if err := checkName("group", groupName); err != nil {
		return fmt.Errorf("cannot consume topic %s: %w", topicName, err)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("cannot consume topic %s: %w", topicName, ErrClosed)
	}
	l.wg.Add(1)
	defer l.wg.Done()
	k := groupKey{topicName, groupName}
	g := l.groups[k]
	if g == nil {
		g = &group{l: l, t: t, name: groupName, owners: make([]*worker, len(t.parts))}
		l.groups[k] = g
	}
	l.mu.Unlock()

	m := &member{ctx: ctx, h: h}
	g.join(m)
	select {
	case <-ctx.Done():
	case <-l.done:
	}
	g.leave(m)
	return nil
}

func (g *group) join(m *member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members = append(g.members, m)
	g.rebalance()
}

func (g *group) leave(m *member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, x := range g.members {
		if x == m {
			g.members = append(g.members[:i], g.members[i+1:]...)
			break
		}
	}
	g.rebalance()
}

// rebalance gives partition p to member p mod len(members): it stops the goroutines of the
// partitions that move, waits for them, then starts the new owners. Caller holds g.mu.
func (g *group) rebalance() {
	want := make([]*member, len(g.owners))
	if n := len(g.members); n > 0 {
		for p := range want {
			want[p] = g.members[p%n]
		}
	}
	var stopped []*worker
	for p, w := range g.owners {
		if w != nil && w.m != want[p] {
			w.cancel()
			stopped = append(stopped, w)
			g.owners[p] = nil
		}
	}
	for _, w := range stopped {
		<-w.done
	}
	for p, m := range want {
		if m == nil || g.owners[p] != nil {
			continue
		}
		ctx, cancel := context.WithCancel(m.ctx)
		w := &worker{m: m, cancel: cancel, done: make(chan struct{})}
		g.owners[p] = w
		go func() {
			defer close(w.done)
			defer cancel()
			g.consumePartition(ctx, g.t.parts[p], m.h)
		}()
	}
}

// consumePartition hands the messages of p to h in offset order, from the group's committed
// offset, until ctx ends.
func (g *group) consumePartition(ctx context.Context, p *partition, h queue.Handler) {
	l := g.l
	log := l.log.With(zap.String("topic", g.t.name), zap.String("group", g.name), zap.Int(telemetry.KeyPartition, p.id))
	var next int64
	if err := backoff.Retry(ctx, l.retry, func() error {
		var err error
		next, err = l.committed(g.t.name, g.name, p.id)
		return err
	}, func(attempt int, err error) {
		log.Warn("cannot read committed offset", zap.Int(telemetry.KeyAttempt, attempt), zap.Error(err))
	}); err != nil {
		return
	}
	// Offsets are committed after every handled message without an fsync (visible at once to
	// the next owner in this process) and fsynced at the end of each read batch, before a
	// failing message is retried, and when the goroutine stops: a crash re-delivers at most
	// one read batch (FetchBatch messages) per partition, instead of paying an fsync per
	// message.
	ckey := commitKey(nil, g.t.name, g.name, p.id)
	dirty := false // a commit is written but not fsynced
	commit := func(sync bool) error {
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], uint64(next))
		opt := pebble.NoSync
		if sync {
			opt = pebble.Sync
		}
		if err := l.db.Set(ckey, v[:], opt); err != nil {
			return err
		}
		dirty = !sync
		return nil
	}
	flush := func() {
		if dirty {
			if err := commit(true); err != nil {
				log.Warn("cannot commit offset", zap.Int64(telemetry.KeyOffset, next), zap.Error(err))
			}
		}
	}
	defer flush()

	var msgs []queue.Message
	for {
		flush()
		visible, changed := p.watch()
		if next >= visible {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		var err error
		msgs, err = l.read(msgs[:0], g.t.name, p.id, next, visible, l.batch)
		if err != nil {
			log.Warn("cannot read messages", zap.Int64(telemetry.KeyOffset, next), zap.Error(err))
			if backoff.Wait(ctx, l.retry.Delay(1)) != nil {
				return
			}
			continue
		}
		if len(msgs) == 0 { // only gaps left below visible
			next = visible
			continue
		}
		for i := range msgs {
			m := &msgs[i]
			err := backoff.Retry(ctx, l.retry, func() error { return h(ctx, *m) },
				func(attempt int, err error) {
					flush()
					log.Warn("handler failed; will retry", zap.Int64(telemetry.KeyOffset, m.Offset),
						zap.Int(telemetry.KeyAttempt, attempt), zap.Error(err))
				})
			if err != nil {
				return // ctx ended; the message stays uncommitted
			}
			next = m.Offset + 1
			// Commit even if ctx just ended: the handler succeeded. Retries stop with ctx
			// (the message is then handed again: at least once).
			last := i == len(msgs)-1
			if err := commit(last); err != nil {
				log.Warn("cannot commit offset", zap.Int64(telemetry.KeyOffset, next), zap.Error(err))
				if backoff.Retry(ctx, l.retry, func() error { return commit(last) }, nil) != nil {
					return
				}
			}
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// committed is the group's next offset to handle in a partition (0 when nothing committed).
func (l *Log) committed(topic, group string, p int) (int64, error) {
	off, _, err := readOffset(l.db, commitKey(nil, topic, group, p))
	return off, err
}

// read appends up to limit messages of a partition with offsets in [from, to) to dst. Keys
// and values are copied (the iterator's memory is not kept).
func (l *Log) read(dst []queue.Message, topic string, p int, from, to int64, limit int) ([]queue.Message, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{
		LowerBound: messageKey(nil, topic, p, from),
		UpperBound: messageKey(nil, topic, p, to),
	})
	if err != nil {
		return dst, err
	}
	for ok := it.First(); ok && limit > 0; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return dst, err
		}
		k, val, err := decodeEnvelope(v)
		if err != nil {
			_ = it.Close()
			return dst, fmt.Errorf("offset %d: %w", offsetOfKey(it.Key()), err)
		}
		buf := make([]byte, len(k)+len(val))
		copy(buf, k)
		copy(buf[len(k):], val)
		dst = append(dst, queue.Message{
			Topic: topic, Partition: p, Offset: offsetOfKey(it.Key()),
			Key: buf[:len(k):len(k)], Value: buf[len(k):],
		})
		limit--
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return dst, err
	}
	return dst, it.Close()
}
