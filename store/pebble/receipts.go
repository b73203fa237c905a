package pebble

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Vendor receipts (issue 20 item 5). A receipt marks (record, channel, device) once, 'R', and
// adds to the record's arrivals of that channel, 'A', in one batch; both go with the record
// (deleteNotification), so marks need no sweep of their own.
//
//	'R' app objectId channel deviceId → ∅                  (receipt_marks)
//	'A' app objectId channel          → arrivals, uint64   (notification_counts, vendor arrivals)
const (
	tReceiptMark  = 'R'
	tReceiptCount = 'A'
)

func receiptMarkKey(app, oid, channel, device string) []byte {
	return appendStr(appendStr(appendStr(appendStr([]byte{tReceiptMark}, app), oid), channel), device)
}

func receiptCountPrefix(t byte, app, oid string) []byte {
	return appendStr(appendStr([]byte{t}, app), oid)
}

func receiptCountKey(app, oid, channel string) []byte {
	return appendStr(receiptCountPrefix(tReceiptCount, app, oid), channel)
}

// CountReceipts implements store.Store. The write is not synced: a receipt lost in a crash loses
// its mark together with its count, and the vendor's repeat (or the next) counts it.
func (s *Store) CountReceipts(ctx context.Context, appID, pushID, channel string, deviceIDs []string, now time.Time) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	n, err := s.countReceipts(appID, pushID, channel, deviceIDs)
	if err != nil {
		return 0, fmt.Errorf("cannot count %s receipts of push record %s of app %s: %w", channel, pushID, appID, err)
	}
	return n, nil
}

func (s *Store) countReceipts(app, oid, channel string, devices []string) (int, error) {
	// The record's stripe: a delete of the record (which removes marks and counts) cannot
	// interleave with the count.
	defer s.locks.lock(stripeOf("n", app, oid))()
	if ok, err := s.recordAlive(app, oid); err != nil || !ok {
		return 0, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	counted := 0
	seen := make(map[string]bool, len(devices))
	for _, d := range devices {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		key := receiptMarkKey(app, oid, channel, d)
		if _, ok, err := s.getInto(nil, key); err != nil {
			return 0, err
		} else if ok {
			continue
		}
		if err := b.Set(key, nil, nil); err != nil {
			return 0, err
		}
		counted++
	}
	if counted == 0 {
		return 0, nil
	}
	ckey := receiptCountKey(app, oid, channel)
	var buf [8]byte
	v, ok, err := s.getInto(buf[:0], ckey)
	if err != nil {
		return 0, err
	}
	cur := uint64(0)
	if ok {
		if len(v) != 8 {
			return 0, store.ErrBadRoute
		}
		cur = binary.BigEndian.Uint64(v)
	}
	var nv [8]byte
	binary.BigEndian.PutUint64(nv[:], cur+uint64(counted))
	if err := b.Set(ckey, nv[:], nil); err != nil {
		return 0, err
	}
	s.recs.counted(notifKey(nil, app, oid)) // before the commit: see recCache
	return counted, b.Commit(pebble.NoSync)
}

// withReceiptCounts adds the vendors' receipt arrivals of n into n.Counts.
func (s *Store) withReceiptCounts(n *push.Notification) error {
	prefix := receiptCountPrefix(tReceiptCount, n.AppID, n.ObjectID)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		ch, _, err := store.DecodeKeyString(it.Key()[len(prefix):])
		if err != nil {
			return err
		}
		v := it.Value()
		if len(v) != 8 {
			return store.ErrBadRoute
		}
		if n.Counts == nil {
			n.Counts = push.Counts{}
		}
		n.Counts.Add(push.Counts{ch: {Arrivals: int64(binary.BigEndian.Uint64(v))}})
	}
	return it.Error()
}

// deleteReceipts removes the marks and counts of record oid inside b.
func deleteReceipts(b *pebble.Batch, app, oid string) error {
	for _, t := range []byte{tReceiptMark, tReceiptCount} {
		p := receiptCountPrefix(t, app, oid)
		if err := b.DeleteRange(p, prefixEnd(p), nil); err != nil {
			return err
		}
	}
	return nil
}
