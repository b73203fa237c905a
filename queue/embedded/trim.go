package embedded

import (
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
// members in this process. A known group with no commit in a partition holds it at 0. The
// partition's floor is written in the same batch (see recoverTopic).
func (l *Log) trim() error {
	l.trimMu.Lock()
	defer l.trimMu.Unlock()
	b := l.db.NewBatch()
	defer b.Close()
	type trimmed struct {
		p        *partition
		from, to int64
		m        *topicMetrics
	}
	var done []trimmed
	for name, t := range l.topics {
		low, err := l.lowWater(name, len(t.parts))
		if err != nil {
			return err
		}
		for i, off := range low {
			p := t.parts[i]
			from := p.floor.Load()
			if off <= from {
				continue
			}
			if err := b.DeleteRange(messageKey(nil, name, i, from), messageKey(nil, name, i, off), nil); err != nil {
				return err
			}
			if err := b.Set(floorKey(nil, name, i), offsetValue(off), nil); err != nil {
				return err
			}
			done = append(done, trimmed{p: p, from: from, to: off, m: l.metrics[name]})
		}
	}
	if b.Empty() {
		return nil
	}
	// Not synced: a trim lost in a crash is redone by the next one, and the floor written here
	// only backs up the committed offsets it was computed from (see recoverTopic).
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	for _, d := range done {
		d.p.floor.Store(d.to)
		d.m.trimmed.Add(int(d.to - d.from))
	}
	return nil
}

// lowWater returns, per partition, the smallest committed offset among the topic's known
// groups; all zero when no group is known.
func (l *Log) lowWater(topic string, n int) ([]int64, error) {
	perGroup, err := l.committedOffsets(topic, n)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	for k := range l.groups {
		if k.topic == topic && perGroup[k.group] == nil {
			perGroup[k.group] = make([]int64, n)
		}
	}
	l.mu.Unlock()
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
