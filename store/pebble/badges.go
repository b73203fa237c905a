package pebble

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// badgeKey is the badge mark of an installation: the last push that incremented its badge,
// and the badge that push set. deleteInstRows removes it with the installation.
func badgeKey(dst []byte, app, oid string) []byte {
	return appendStr(appendStr(append(dst, tBadge), app), oid)
}

func appendBadgeMark(dst []byte, pushID string, badge int64) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(pushID)))
	dst = append(dst, pushID...)
	return binary.AppendVarint(dst, badge)
}

// badgeMarkOf returns the badge of a mark set by pushID; ok is false for another push's mark
// (or one that does not decode, which counts as none).
func badgeMarkOf(v []byte, pushID string) (badge int64, ok bool) {
	n, k := binary.Uvarint(v)
	if k <= 0 || n > uint64(len(v)-k) || string(v[k:k+int(n)]) != pushID {
		return 0, false
	}
	badge, m := binary.Varint(v[k+int(n):])
	return badge, m > 0
}

// IncrementBadges implements store.Store: under the stripes of the installations, one
// unsynced batch rewrites each changed installation (its document rows carry the badge) and
// its badge mark. A task checkpoint, synced, follows every sent batch and makes it durable.
func (s *Store) IncrementBadges(ctx context.Context, appID string, buckets int, pushID string, objectIDs []string, badges []int64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if len(badges) < len(objectIDs) {
		panic("BUG: IncrementBadges needs a badge slot per installation")
	}
	if err := checkBuckets(buckets); err != nil {
		return err
	}
	idx := make([]int, len(objectIDs))
	for i, oid := range objectIDs {
		idx[i] = stripeOf("i", appID, oid)
	}
	defer s.locks.lockAll(idx)()
	w := s.absence.begin(appID)
	defer w.end() // after the commit
	b := s.db.NewBatch()
	defer b.Close()
	var mark, key []byte
	owned := make([]bool, 0, 3)
	for i, oid := range objectIDs {
		st, err := s.readInst(appID, oid)
		if errors.Is(err, store.ErrNotFound) {
			badges[i] = 1
			continue
		}
		if err != nil {
			return fmt.Errorf("cannot increment the badge of installation %s of app %s: %w", oid, appID, err)
		}
		key = badgeKey(key[:0], appID, oid)
		var found bool
		if mark, found, err = s.getInto(mark[:0], key); err != nil {
			return fmt.Errorf("cannot read the badge mark of installation %s of app %s: %w", oid, appID, err)
		}
		if found {
			if n, ok := badgeMarkOf(mark, pushID); ok {
				badges[i] = n // this push already set it
				continue
			}
		}
		n := push.NextBadge(st.inst.Doc)
		inst := st.inst
		if inst.Doc, err = push.WithBadge(st.inst.Doc, n); err != nil {
			return fmt.Errorf("cannot increment the badge of installation %s of app %s: %w", oid, appID, err)
		}
		ids := inst.Route.DeviceIDs()
		owned = owned[:0]
		for range ids {
			owned = append(owned, true) // the same ids: their rows stay
		}
		if err := putInstRows(w, b, appID, st.bucket, &inst, ids, owned, st, true); err != nil {
			return fmt.Errorf("cannot increment the badge of installation %s of app %s: %w", oid, appID, err)
		}
		if err := b.Set(key, appendBadgeMark(nil, pushID, n), nil); err != nil {
			return fmt.Errorf("cannot increment the badge of installation %s of app %s: %w", oid, appID, err)
		}
		badges[i] = n
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		s.forgetRows(b)
		return fmt.Errorf("cannot write badges of app %s: %w", appID, err)
	}
	s.learnRows(b) // under the stripes, released by the deferred unlock
	return nil
}

// deadKey is the dead-token mark of a device id of an app.
func deadKey(dst []byte, app, deviceID string) []byte {
	return appendStr(appendStr(append(dst, tDead), app), deviceID)
}

// MarkDeadToken implements store.Store. The write is not synced: a mark lost in a crash only
// costs one more request to the gateway, which reports the token dead again.
func (s *Store) MarkDeadToken(ctx context.Context, appID, deviceID string, since time.Time) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	v := binary.AppendVarint(nil, since.UnixMilli())
	s.dead.add(appID) // before the mark: a writer that finds the app outside the set has no mark to clear
	if err := s.db.Set(deadKey(nil, appID, deviceID), v, pebble.NoSync); err != nil {
		return fmt.Errorf("cannot mark a dead token of app %s: %w", appID, err)
	}
	return nil
}

// DeadToken implements store.Store. Marks are kept until a write of the device id clears them
// or a later mark replaces them; callers judge their age (push.DeadTokenLive).
func (s *Store) DeadToken(ctx context.Context, appID, deviceID string) (time.Time, error) {
	if err := s.enter(); err != nil {
		return time.Time{}, err
	}
	defer s.exit()
	var buf [16]byte
	v, ok, err := s.getInto(buf[:0], deadKey(nil, appID, deviceID))
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot read a dead-token mark of app %s: %w", appID, err)
	}
	if !ok {
		return time.Time{}, store.ErrNotFound
	}
	ms, n := binary.Varint(v)
	if n <= 0 {
		return time.Time{}, fmt.Errorf("cannot read a dead-token mark of app %s: %w", appID, store.ErrBadRoute)
	}
	return time.UnixMilli(ms), nil
}
