package pebble

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// The own channel's offline cache: one row per (app, installation, message id). A cached
// message's value is stateCached, its seq, its keep-until (its expiry) and its JSON; an acked or
// expired one shrinks to stateDone and a keep-until, and stays only so that a second copy of
// the message consumed from push.direct (after a crash) is recognised and not counted twice.
const (
	stateCached = 1
	stateDone   = 2
)

func offlinePrefix(dst []byte, app, iid string) []byte {
	return appendStr(appendStr(append(dst, tOffline), app), iid)
}

func offlineKey(dst []byte, app, iid, id string) []byte {
	return appendStr(offlinePrefix(dst, app, iid), id)
}

// offlineRow is one decoded row.
type offlineRow struct {
	key   []byte
	state byte
	seq   int64
	keep  int64 // unix ms; 0: keep until acked
	msg   []byte
}

func encodeOffline(state byte, seq, keep int64, msg []byte) []byte {
	v := make([]byte, 17, 17+len(msg))
	v[0] = state
	binary.BigEndian.PutUint64(v[1:], uint64(seq))
	binary.BigEndian.PutUint64(v[9:], uint64(keep))
	return append(v, msg...)
}

func decodeOffline(key, v []byte) (offlineRow, error) {
	if len(v) < 17 || (v[0] != stateCached && v[0] != stateDone) {
		return offlineRow{}, store.ErrBadRoute
	}
	return offlineRow{
		key:   key,
		state: v[0],
		seq:   int64(binary.BigEndian.Uint64(v[1:])),
		keep:  int64(binary.BigEndian.Uint64(v[9:])),
		msg:   v[17:],
	}, nil
}

// doneUntil is the keep-until of a done row written at now (store.DirectAckedKeep).
func doneUntil(now time.Time) int64 {
	return now.Add(store.DirectAckedKeep).UnixMilli()
}

// offlineRows reads every row of one installation's cache.
func (s *Store) offlineRows(app, iid string) ([]offlineRow, error) {
	prefix := offlinePrefix(nil, app, iid)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var rows []offlineRow
	for ok := it.First(); ok; ok = it.Next() {
		r, err := decodeOffline(append([]byte(nil), it.Key()...), append([]byte(nil), it.Value()...))
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, it.Error()
}

func directCountKey(dst []byte, app, oid string) []byte {
	return appendStr(appendStr(append(dst, tDirectCount), app), oid)
}

// directCounts reads the own channel's counts of push record oid (zero when none).
func (s *Store) directCounts(app, oid string) (push.Tally, error) {
	var buf [24]byte
	v, ok, err := s.getInto(buf[:0], directCountKey(nil, app, oid))
	if err != nil || !ok {
		return push.Tally{}, err
	}
	if len(v) != 24 {
		return push.Tally{}, store.ErrBadRoute
	}
	return push.Tally{
		Sent:     int64(binary.BigEndian.Uint64(v)),
		Expired:  int64(binary.BigEndian.Uint64(v[8:])),
		Arrivals: int64(binary.BigEndian.Uint64(v[16:])),
	}, nil
}

// withDirectCounts adds the own channel's counts of n (kept beside the record, 'e') into
// n.Counts: the record as the store's readers see it.
// The vendors' receipt arrivals (receipts.go) are added here too.
func (s *Store) withDirectCounts(n *push.Notification) error {
	if s.recs.noCounts(notifKey(nil, n.AppID, n.ObjectID)) {
		return nil // created under a fresh objectId and not counted since (reccache.go)
	}
	t, err := s.directCounts(n.AppID, n.ObjectID)
	if err != nil {
		return err
	}
	if !t.Equal(push.Tally{}) {
		if n.Counts == nil {
			n.Counts = push.Counts{}
		}
		n.Counts.Add(push.Counts{push.ChannelDirect: t})
	}
	return s.withReceiptCounts(n)
}

// countDirect adds t to the own channel's counts of push record oid inside b. The caller holds
// the counts' stripe ("e", app, oid) until b is committed.
func (s *Store) countDirect(b *pebble.Batch, app, oid string, t push.Tally) error {
	s.recs.counted(notifKey(nil, app, oid)) // before the commit: see recCache
	cur, err := s.directCounts(app, oid)
	if err != nil {
		return err
	}
	cur.Add(t)
	var v [24]byte
	binary.BigEndian.PutUint64(v[:], uint64(cur.Sent))
	binary.BigEndian.PutUint64(v[8:], uint64(cur.Expired))
	binary.BigEndian.PutUint64(v[16:], uint64(cur.Arrivals))
	return b.Set(directCountKey(nil, app, oid), v[:], nil)
}

// recordAlive says whether push record oid exists (a cancelled push's record is removed).
func (s *Store) recordAlive(app, oid string) (bool, error) {
	_, ok, err := s.getInto(nil, notifKey(nil, app, oid))
	return ok, err
}

// CacheDirect implements store.Store.
func (s *Store) CacheDirect(ctx context.Context, msg push.DirectMessage, now time.Time, limit int) (push.CacheOutcome, int, error) {
	if err := s.enter(); err != nil {
		return 0, 0, err
	}
	defer s.exit()
	out, dropped, err := s.cacheDirect(msg, now, limit)
	if err != nil {
		return 0, 0, fmt.Errorf("cannot cache message %s for installation %s of app %s: %w", msg.ID, msg.InstallationID, msg.AppID, err)
	}
	return out, dropped, nil
}

func (s *Store) cacheDirect(msg push.DirectMessage, now time.Time, limit int) (push.CacheOutcome, int, error) {
	app, iid := msg.AppID, msg.InstallationID
	// The stripes are held while reading and committing to memory only; the WAL sync that makes
	// the write durable follows outside them, so that the devices of one push (one counts key)
	// do not wait on each other's fsync.
	unlock := s.locks.lockAll([]int{stripeOf("f", app, iid), stripeOf("e", app, msg.ID)})
	out, dropped, err := s.cacheDirectLocked(msg, now, limit)
	unlock()
	if err != nil || out == push.CacheDuplicate || out == push.CacheCancelled {
		return out, dropped, err
	}
	return out, dropped, s.syncWAL()
}

func (s *Store) cacheDirectLocked(msg push.DirectMessage, now time.Time, limit int) (push.CacheOutcome, int, error) {
	app, iid := msg.AppID, msg.InstallationID
	key := offlineKey(nil, app, iid, msg.ID)
	if _, ok, err := s.getInto(nil, key); err != nil || ok {
		return push.CacheDuplicate, 0, err
	}
	// A push cancelled before this message is cached has no record: not delivered. One being
	// cancelled meanwhile may still see it cached; it then counts as sent, as the spec says.
	if ok, err := s.recordAlive(app, msg.ID); err != nil || !ok {
		return push.CacheCancelled, 0, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if msg.Expired(now) {
		if err := s.countDirect(b, app, msg.ID, push.Tally{Expired: 1}); err != nil {
			return 0, 0, err
		}
		if err := b.Set(key, encodeOffline(stateDone, 0, doneUntil(now), nil), nil); err != nil {
			return 0, 0, err
		}
		return push.CacheExpired, 0, b.Commit(pebble.NoSync)
	}
	if err := s.countDirect(b, app, msg.ID, push.Tally{Sent: 1}); err != nil {
		return 0, 0, err
	}
	rows, err := s.offlineRows(app, iid)
	if err != nil {
		return 0, 0, err
	}
	// Rows past their keep-until go; the oldest cached ones go past the bound.
	nowMs := now.UnixMilli()
	var cached []offlineRow
	seq := now.UnixNano()
	for _, r := range rows {
		if r.keep != 0 && r.keep <= nowMs {
			if err := b.Delete(r.key, nil); err != nil {
				return 0, 0, err
			}
			continue
		}
		if r.state == stateCached {
			cached = append(cached, r)
			seq = max(seq, r.seq+1)
		}
	}
	dropped := 0
	if limit > 0 && len(cached) >= limit {
		slices.SortFunc(cached, func(a, b offlineRow) int { return cmp.Compare(a.seq, b.seq) })
		for _, r := range cached[:len(cached)-limit+1] {
			if err := b.Delete(r.key, nil); err != nil {
				return 0, 0, err
			}
			dropped++
		}
	}
	msg.Seq = seq
	v, err := json.Marshal(&msg)
	if err != nil {
		return 0, 0, err
	}
	if err := b.Set(key, encodeOffline(stateCached, seq, msg.Expires, v), nil); err != nil {
		return 0, 0, err
	}
	return push.CacheStored, dropped, b.Commit(pebble.NoSync)
}

// OfflineMessages implements store.Store.
func (s *Store) OfflineMessages(ctx context.Context, appID, installationID string, now time.Time) ([]push.DirectMessage, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	rows, err := s.offlineRows(appID, installationID)
	if err != nil {
		return nil, fmt.Errorf("cannot read the offline messages of installation %s of app %s: %w", installationID, appID, err)
	}
	var out []push.DirectMessage
	for _, r := range rows {
		if r.state != stateCached {
			continue
		}
		var m push.DirectMessage
		if err := json.Unmarshal(r.msg, &m); err != nil {
			return nil, fmt.Errorf("cannot decode an offline message of installation %s of app %s: %w", installationID, appID, err)
		}
		if m.Expired(now) {
			continue
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b push.DirectMessage) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// AckDirect implements store.Store. The write is not synced: an ack lost in a crash loses its
// count together with its removal, and the device, sent the message again, acks it again.
func (s *Store) AckDirect(ctx context.Context, appID, installationID string, ids []string, now time.Time) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	n, err := s.ackDirect(appID, installationID, ids, now)
	if err != nil {
		return 0, fmt.Errorf("cannot ack messages of installation %s of app %s: %w", installationID, appID, err)
	}
	return n, nil
}

func (s *Store) ackDirect(app, iid string, ids []string, now time.Time) (int, error) {
	stripes := make([]int, 0, len(ids)+1)
	stripes = append(stripes, stripeOf("f", app, iid))
	for _, id := range ids {
		stripes = append(stripes, stripeOf("e", app, id))
	}
	defer s.locks.lockAll(stripes)()
	b := s.db.NewBatch()
	defer b.Close()
	acked := 0
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		key := offlineKey(nil, app, iid, id)
		v, err := s.get(key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		r, err := decodeOffline(key, v)
		if err != nil {
			return 0, err
		}
		if r.state != stateCached {
			continue
		}
		if err := b.Set(key, encodeOffline(stateDone, 0, doneUntil(now), nil), nil); err != nil {
			return 0, err
		}
		if alive, err := s.recordAlive(app, id); err != nil {
			return 0, err
		} else if alive { // a removed record (swept, or deleted by the admin) counts nothing
			if err := s.countDirect(b, app, id, push.Tally{Arrivals: 1}); err != nil {
				return 0, err
			}
		}
		acked++
	}
	if acked == 0 {
		return 0, nil
	}
	return acked, b.Commit(pebble.NoSync)
}

// SweepOffline deletes up to limit offline-cache rows past their keep-until at now: expired
// cached messages and done rows, of devices that never came back to have them removed by a
// later cache write. It says how many it deleted. The embedded store only (Cassandra's rows
// carry TTLs); cmd/pushd runs it on the gateway role's nodes every --sweep-every.
func (s *Store) SweepOffline(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	prefix := []byte{tOffline}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, fmt.Errorf("cannot sweep the offline cache: %w", err)
	}
	nowMs := now.UnixMilli()
	var stale [][]byte
	for ok := it.First(); ok && len(stale) < limit; ok = it.Next() {
		if err := ctx.Err(); err != nil {
			_ = it.Close()
			return 0, err
		}
		r, err := decodeOffline(nil, it.Value())
		if err != nil {
			_ = it.Close()
			return 0, fmt.Errorf("cannot sweep the offline cache: %w", err)
		}
		if r.keep != 0 && r.keep <= nowMs {
			stale = append(stale, append([]byte(nil), it.Key()...))
		}
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("cannot sweep the offline cache: %w", err)
	}
	deleted := 0
	for _, k := range stale {
		app, rest, err := store.DecodeKeyString(k[1:])
		if err != nil {
			return deleted, fmt.Errorf("cannot sweep the offline cache: %w", err)
		}
		iid, _, err := store.DecodeKeyString(rest)
		if err != nil {
			return deleted, fmt.Errorf("cannot sweep the offline cache: %w", err)
		}
		ok, err := s.sweepOfflineRow(app, iid, k, nowMs)
		if err != nil {
			return deleted, fmt.Errorf("cannot sweep the offline cache of installation %s of app %s: %w", iid, app, err)
		}
		if ok {
			deleted++
		}
	}
	return deleted, nil
}

// sweepOfflineRow deletes row k if, read again under its device's stripe, it is still stale.
func (s *Store) sweepOfflineRow(app, iid string, k []byte, nowMs int64) (bool, error) {
	defer s.locks.lock(stripeOf("f", app, iid))()
	v, ok, err := s.getInto(nil, k)
	if err != nil || !ok {
		return false, err
	}
	r, err := decodeOffline(k, v)
	if err != nil {
		return false, err
	}
	if r.keep == 0 || r.keep > nowMs {
		return false, nil
	}
	return true, s.db.Delete(k, pebble.NoSync)
}
