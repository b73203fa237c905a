package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
)

// recoverTopic rebuilds the partitions of a topic from the DB. The next offset of a partition
// is the largest of: one past its last message, its trim floor, and every group's committed
// offset. Trimming may have emptied the partition, and the committed offsets and the floor
// are what remember how far its offsets went: restarting it lower would put new messages
// below the committed offsets, where no group reads them, until a trim deletes them.
//
// The trim writes the floor and range-deletes without an fsync, and commits are fsynced once
// per read batch; neither needs more, because Pebble recovers a prefix of its writes: a trim
// that survived a crash brings with it the commits it was computed from, which hold the next
// offset up on their own.
//
// A group whose committed offset is beyond the end of a partition that still holds messages
// (which only offsets reused below a commit, by an older pushd, or a damaged DB leave behind)
// has never been handed those messages: it is rewound to the oldest one, with an error logged
// and counted, so that they are handed (again, at worst) instead of skipped.
func (l *Log) recoverTopic(name string, n int, m *topicMetrics) (*topic, error) {
	commits, err := l.committedOffsets(name, n)
	if err != nil {
		return nil, fmt.Errorf("cannot read the committed offsets of topic %s: %w", name, err)
	}
	groups := make([]string, 0, len(commits))
	for g := range commits {
		groups = append(groups, g)
	}
	slices.Sort(groups)

	t := &topic{name: name, parts: make([]*partition, n)}
	b := l.db.NewBatch()
	defer b.Close()
	for i := range n {
		first, end, err := bounds(l.db, name, i)
		if err != nil {
			return nil, fmt.Errorf("cannot recover partition %d of topic %s: %w", i, name, err)
		}
		floor, _, err := readOffset(l.db, floorKey(nil, name, i))
		if err != nil {
			return nil, fmt.Errorf("cannot read the trim floor of partition %d of topic %s: %w", i, name, err)
		}
		next := max(end, floor)
		empty := first == end
		for _, g := range groups {
			c := commits[g][i]
			if !empty && c > end {
				l.log.Error("committed offset beyond the partition's last message: rewinding the group to hand the messages kept below it",
					zap.String("topic", name), zap.String("group", g), zap.Int(telemetry.KeyPartition, i),
					zap.Int64(telemetry.KeyOffset, c), zap.Int64("first_offset", first), zap.Int64("end_offset", end))
				m.rewound.Add(int(end - first))
				_ = b.Set(commitKey(nil, name, g, i), offsetValue(first), nil)
				c = first
			}
			next = max(next, c)
		}
		p := &partition{id: i, next: next, visible: next, changed: make(chan struct{})}
		// Nothing is kept below the oldest message (below next when empty): the next trim
		// deletes from there.
		if empty {
			p.floor.Store(next)
		} else {
			p.floor.Store(max(floor, first))
		}
		t.parts[i] = p
	}
	if !b.Empty() {
		if err := b.Commit(pebble.Sync); err != nil {
			return nil, fmt.Errorf("cannot rewind committed offsets of topic %s: %w", name, err)
		}
	}
	return t, nil
}

// bounds returns the offset of the partition's first message and one past its last (both
// 0 when it was never written; first == end when it is empty).
func bounds(db *pebble.DB, topic string, p int) (first, end int64, err error) {
	it, err := db.NewIter(&pebble.IterOptions{
		LowerBound: partitionPrefix(nil, topic, p),
		UpperBound: partitionEnd(nil, topic, p),
	})
	if err != nil {
		return 0, 0, err
	}
	if it.First() {
		first = offsetOfKey(it.Key())
		end = first + 1
	}
	if it.Last() {
		end = offsetOfKey(it.Key()) + 1
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return 0, 0, err
	}
	return first, end, it.Close()
}

// readOffset reads an offset value (a committed offset, a floor); found is false when the
// key is absent.
func readOffset(db *pebble.DB, key []byte) (off int64, found bool, err error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, errors.New("malformed offset value")
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// committedOffsets returns, per group with a committed offset in the DB, the committed
// offset of each of the topic's n partitions (0 where it has none).
func (l *Log) committedOffsets(topic string, n int) (map[string][]int64, error) {
	perGroup := make(map[string][]int64)
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
	if err := it.Error(); err != nil {
		_ = it.Close()
		return nil, err
	}
	return perGroup, it.Close()
}
