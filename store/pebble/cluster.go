package pebble

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Cluster-wide limits (call_counts, app_blocks) and members. Their writes are not synced: a
// count or a heartbeat lost with the machine (not the process: the WAL is written before the
// call returns) costs at most the calls of one instant admitted again, or one heartbeat.
const (
	tCallCount = 'C' // app → minute, count (int64 each): only the current minute is kept
	tAppBlock  = 'B' // app → until, unix ns
	tMember    = 'M' // group member → expires, unix ns
)

func callCountKey(dst []byte, app string) []byte { return appendStr(append(dst, tCallCount), app) }
func appBlockKey(dst []byte, app string) []byte  { return appendStr(append(dst, tAppBlock), app) }
func memberPrefix(dst []byte, group string) []byte {
	return appendStr(append(dst, tMember), group)
}

// ReserveCalls implements store.Store: read, clamp, write under the app's counter stripe, so
// concurrent reservations never grant more than limit in a minute. The row keeps one minute:
// a later minute starts from 0; a reservation for an earlier minute than the stored one (a
// node whose clock lags) counts against the stored minute.
func (s *Store) ReserveCalls(ctx context.Context, appID string, minute int64, want, limit int) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	if want <= 0 {
		return 0, nil
	}
	defer s.locks.lock(stripeOf("C", appID))()
	var kbuf [64]byte
	key := callCountKey(kbuf[:0], appID)
	var vbuf [16]byte
	v, found, err := s.getInto(vbuf[:0], key)
	if err != nil {
		return 0, fmt.Errorf("cannot read the call count of app %s: %w", appID, err)
	}
	var count int64
	if found && len(v) == 16 {
		stored := int64(binary.BigEndian.Uint64(v))
		if stored >= minute {
			minute, count = stored, int64(binary.BigEndian.Uint64(v[8:]))
		}
	}
	granted := min(int64(want), int64(limit)-count)
	if granted <= 0 {
		return 0, nil
	}
	out := binary.BigEndian.AppendUint64(vbuf[:0], uint64(minute))
	out = binary.BigEndian.AppendUint64(out, uint64(count+granted))
	if err := s.db.Set(key, out, pebble.NoSync); err != nil {
		return 0, fmt.Errorf("cannot count calls of app %s: %w", appID, err)
	}
	return int(granted), nil
}

// BlockApp implements store.Store.
func (s *Store) BlockApp(ctx context.Context, appID string, until time.Time) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("B", appID))()
	key := appBlockKey(nil, appID)
	cur, err := s.readInt64(key)
	if err != nil {
		return fmt.Errorf("cannot read the block of app %s: %w", appID, err)
	}
	if cur >= until.UnixNano() {
		return nil
	}
	if err := s.db.Set(key, binary.BigEndian.AppendUint64(nil, uint64(until.UnixNano())), pebble.NoSync); err != nil {
		return fmt.Errorf("cannot block app %s: %w", appID, err)
	}
	return nil
}

// AppBlocked implements store.Store.
func (s *Store) AppBlocked(ctx context.Context, appID string, now time.Time) (time.Time, error) {
	if err := s.enter(); err != nil {
		return time.Time{}, err
	}
	defer s.exit()
	var kbuf [64]byte
	until, err := s.readInt64(appBlockKey(kbuf[:0], appID))
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot read the block of app %s: %w", appID, err)
	}
	if until <= now.UnixNano() {
		return time.Time{}, nil
	}
	return time.Unix(0, until), nil
}

// RegisterMember implements store.Store: it writes member's expiry and counts the group's
// unexpired rows, deleting the expired ones it passes.
func (s *Store) RegisterMember(ctx context.Context, group, member string, now time.Time, ttl time.Duration) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	prefix := memberPrefix(nil, group)
	key := appendStr(append([]byte(nil), prefix...), member)
	if err := s.db.Set(key, binary.BigEndian.AppendUint64(nil, uint64(now.Add(ttl).UnixNano())), pebble.NoSync); err != nil {
		return 0, fmt.Errorf("cannot register member %s of %s: %w", member, group, err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	live := 0
	err := s.iterate(prefix, prefixEnd(prefix), func(k, v []byte) error {
		if len(v) == 8 && int64(binary.BigEndian.Uint64(v)) > now.UnixNano() {
			live++
			return nil
		}
		return b.Delete(k, nil)
	})
	if err != nil {
		return 0, fmt.Errorf("cannot count members of %s: %w", group, err)
	}
	if !b.Empty() {
		if err := b.Commit(pebble.NoSync); err != nil {
			return 0, fmt.Errorf("cannot drop expired members of %s: %w", group, err)
		}
	}
	return live, nil
}
