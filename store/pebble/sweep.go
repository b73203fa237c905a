package pebble

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/store"
)

// What Cassandra expires by TTL, the embedded store removes by sweeps: a background service
// calls these periodically (installations go through store.Store.DeleteInactive).

// SweepNotifications removes up to limit push records of the app created before cutoff (the
// 7-day retention of CLUSTER.md), oldest first, with their indexes, and says how many.
func (s *Store) SweepNotifications(ctx context.Context, appID string, cutoff time.Time, limit int) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	if limit <= 0 {
		return 0, nil
	}
	// Keys hold ^createdAt: records created before cutoff sort after ^cutoff.
	prefix := notifTimePrefix(nil, appID)
	lower := appendInt64(append([]byte(nil), prefix...), ^(cutoff.UnixNano() - 1))
	var oids []string
	err := s.iterate(lower, prefixEnd(prefix), func(k, _ []byte) error {
		if len(k) < len(prefix)+8 {
			return store.ErrBadKey
		}
		oid, _, err := store.DecodeKeyString(k[len(prefix)+8:])
		if err != nil {
			return err
		}
		oids = append(oids, oid)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cannot list old push records of app %s: %w", appID, err)
	}
	// Oldest first: the iteration ran newest first within the range.
	n := 0
	for i := len(oids) - 1; i >= 0 && n < limit; i-- {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		err := s.deleteNotification(appID, oids[i], pebble.NoSync)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("cannot delete old push record %s of app %s: %w", oids[i], appID, err)
		}
		n++
	}
	if n > 0 {
		if err := s.db.LogData(nil, pebble.Sync); err != nil {
			return n, fmt.Errorf("cannot sync deletions of old push records of app %s: %w", appID, err)
		}
	}
	return n, nil
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
