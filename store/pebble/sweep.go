package pebble

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// What Cassandra expires by TTL, the embedded store removes by sweeps: a background service
// calls these periodically (installations go through store.Store.DeleteInactive).

// SweepNotifications removes up to limit push records of the app that expired before cutoff
// (push.Notification.Expired: the push is finished, done or cancelled, and the record was
// created and last updated before cutoff; the sweeper passes now minus push.RecordRetention),
// oldest first, with their indexes, and says how many. Records of unfinished pushes (scheduled,
// in-queue, in-process) are skipped however old: fan-out still writes their counts and a
// DELETE cancels through them. Each record is checked again under its lock before it goes, so
// one updated during the sweep stays.
func (s *Store) SweepNotifications(ctx context.Context, appID string, cutoff time.Time, limit int) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	if limit <= 0 {
		return 0, nil
	}
	oids, err := s.expiredNotifications(ctx, appID, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("cannot list old push records of app %s: %w", appID, err)
	}
	n := 0
	for _, oid := range oids {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		deleted, err := s.deleteExpiredNotification(appID, oid, cutoff)
		if err != nil {
			return n, fmt.Errorf("cannot delete old push record %s of app %s: %w", oid, appID, err)
		}
		if deleted {
			n++
		}
	}
	if n > 0 {
		if err := s.db.LogData(nil, pebble.Sync); err != nil {
			return n, fmt.Errorf("cannot sync deletions of old push records of app %s: %w", appID, err)
		}
	}
	return n, nil
}

// expiredNotifications lists up to limit ids of the app's records that expired before cutoff,
// oldest first. It walks the time index backwards (keys hold ^createdAt, so the oldest record
// sorts last) over the records created before cutoff, and reads each to judge it.
func (s *Store) expiredNotifications(ctx context.Context, appID string, cutoff time.Time, limit int) (oids []string, err error) {
	prefix := notifTimePrefix(nil, appID)
	// Records created before cutoff sort at or after ^(cutoff-1).
	lower := appendInt64(append([]byte(nil), prefix...), ^(cutoff.UnixNano() - 1))
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	for valid := it.Last(); valid && len(oids) < limit; valid = it.Prev() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k := it.Key()
		if len(k) < len(prefix)+8 {
			return nil, store.ErrBadKey
		}
		oid, _, err := store.DecodeKeyString(k[len(prefix)+8:])
		if err != nil {
			return nil, err
		}
		rec, err := s.readNotification(appID, oid)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted after the iterator opened
		}
		if err != nil {
			return nil, err
		}
		if rec.Expired(cutoff) {
			oids = append(oids, oid)
		}
	}
	return oids, it.Error()
}

// deleteExpiredNotification removes a record and its index rows if, read again under the
// record's stripe, it is still expired at cutoff; it says whether it did.
func (s *Store) deleteExpiredNotification(appID, objectID string, cutoff time.Time) (bool, error) {
	deleted, err := s.deleteNotification(appID, objectID, pebble.NoSync, func(n *push.Notification) bool { return n.Expired(cutoff) })
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return deleted, err
}

// SweepReqIDs removes up to limit req_id claims (of every app) expired at now, and says how
// many. Expired claims are harmless (ClaimReqID overwrites them); this bounds their space.
func (s *Store) SweepReqIDs(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	if limit <= 0 {
		return 0, nil
	}
	lower := []byte{tReqID}
	var keys [][]byte
	err := s.iterate(lower, prefixEnd(lower), func(k, v []byte) error {
		if _, expires, ok := decodeClaim(v); ok && !now.Before(expires) {
			keys = append(keys, append([]byte(nil), k...))
			if len(keys) >= limit {
				return errStop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, fmt.Errorf("cannot sweep req_id claims: %w", err)
	}
	n := 0
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		app, rest, err := store.DecodeKeyString(k[1:])
		if err != nil {
			continue
		}
		reqID, _, err := store.DecodeKeyString(rest)
		if err != nil {
			continue
		}
		// Re-checked under the stripe: a claim renewed since the scan stays.
		unlock := s.locks.lock(stripeOf("r", app, reqID))
		v, found, err := s.getInto(nil, k)
		if err == nil && found {
			if _, expires, ok := decodeClaim(v); ok && !now.Before(expires) {
				if err = s.db.Delete(k, pebble.NoSync); err == nil {
					n++
				}
			}
		}
		unlock()
		if err != nil {
			return n, fmt.Errorf("cannot sweep req_id claims: %w", err)
		}
	}
	if n > 0 {
		if err := s.db.LogData(nil, pebble.Sync); err != nil {
			return n, fmt.Errorf("cannot sync req_id sweep: %w", err)
		}
	}
	return n, nil
}
