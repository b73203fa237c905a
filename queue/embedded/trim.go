package embedded

import (
	"encoding/binary"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"
)

func (l *Log) trimLoop(interval time.Duration) {
	defer l.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
		}
		if err := l.trim(); err != nil {
			l.log.Warn("cannot trim the log", zap.Error(err))
		}
	}
}

// trim deletes, in every partition, the messages below the smallest committed offset of the
// groups known for the topic: groups with committed offsets in the DB and groups with
// members in this process. A known group with no commit in a partition holds it at 0.
func (l *Log) trim() error {
	l.trimMu.Lock()
	defer l.trimMu.Unlock()
	b := l.db.NewBatch()
	defer b.Close()
	for name, t := range l.topics {
		low, err := l.lowWater(name, len(t.parts))
		if err != nil {
			return err
		}
		trimmed := l.trimmed[name]
		for p, off := range low {
			if off <= trimmed[p] {
				continue
			}
			if err := b.DeleteRange(messageKey(nil, name, p, trimmed[p]), messageKey(nil, name, p, off), nil); err != nil {
				return err
			}
			trimmed[p] = off
		}
	}
	if b.Empty() {
		return nil
	}
	// Not synced: a lost trim is redone by the next one (trimmed restarts at 0 after Open).
	return b.Commit(pebble.NoSync)
}

// lowWater returns, per partition, the smallest committed offset among the topic's known
// groups; all zero when no group is known.
func (l *Log) lowWater(topic string, n int) ([]int64, error) {
	perGroup := make(map[string][]int64)
	l.mu.Lock()
	for k := range l.groups {
		if k.topic == topic {
			perGroup[k.group] = make([]int64, n)
		}
	}
	l.mu.Unlock()

	prefix := topicCommitPrefix(nil, topic)
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		g, p, err := decodeCommitKey(it.Key()[len(prefix):])
		if err != nil || p >= n {
			continue // foreign or stale key: ignore
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		if len(v) != 8 {
			continue
		}
		offs := perGroup[g]
		if offs == nil {
			offs = make([]int64, n)
			perGroup[g] = offs
		}
		offs[p] = int64(binary.BigEndian.Uint64(v))
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	low := make([]int64, n)
	first := true
	for _, offs := range perGroup {
		for p, o := range offs {
			if first || o < low[p] {
				low[p] = o
			}
		}
		first = false
	}
	return low, nil
}
