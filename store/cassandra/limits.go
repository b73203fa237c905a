package cassandra

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/store"
)

const (
	cqlIDGet    = `SELECT value FROM id_counters WHERE name = ?`
	cqlIDInsert = `INSERT INTO id_counters (name, value) VALUES (?, 1) IF NOT EXISTS`
	cqlIDCAS    = `UPDATE id_counters SET value = ? WHERE name = ? IF value = ?`

	cqlReqInsert = `INSERT INTO req_ids (app_id, req_id, object_id, created_at) VALUES (?, ?, ?, ?) IF NOT EXISTS USING TTL ?`
	cqlReqCAS    = `UPDATE req_ids USING TTL ? SET object_id = ?, created_at = ? WHERE app_id = ? AND req_id = ? IF created_at = ?`
	cqlReqGet    = `SELECT object_id, created_at FROM req_ids WHERE app_id = ? AND req_id = ?`

	cqlVolumeAdd = `UPDATE daily_volume SET volume = volume + ? WHERE app_id = ? AND day = ?`
	cqlVolumeGet = `SELECT volume FROM daily_volume WHERE app_id = ? AND day = ?`
)

// NextID implements store.Store with a compare-and-set counter: unique across the cluster. An
// advance whose outcome is unknown (a timeout) is taken as lost: the counter is read again at
// SERIAL and the next value tried, so an id may be skipped but never handed out twice.
func (s *Store) NextID(ctx context.Context, name string) (int64, error) {
	var cur int64
	known, err := s.serialRow(ctx, cqlIDGet, []any{name}, &cur)
	if err != nil {
		return 0, fmt.Errorf("cannot read id counter %s: %w", name, err)
	}
	// An advance whose outcome is unknown counts as another's: the value read is the next
	// compare-and-set's base.
	reread := func(ctx context.Context, prev map[string]any) (casState, error) {
		var v int64
		found, err := s.serialRow(ctx, cqlIDGet, []any{name}, &v)
		if found {
			prev["value"] = v
		}
		return stateOf(found, false), err
	}
	for range maxCASRetries * 4 {
		prev := map[string]any{}
		if !known {
			applied, err := s.cas(ctx, s.q(ctx, cqlIDInsert, name), prev, reread)
			if err != nil {
				return 0, fmt.Errorf("cannot create id counter %s: %w", name, err)
			}
			if applied {
				return 1, nil
			}
		} else {
			applied, err := s.cas(ctx, s.q(ctx, cqlIDCAS, cur+1, name, cur), prev, reread)
			if err != nil {
				return 0, fmt.Errorf("cannot advance id counter %s: %w", name, err)
			}
			if applied {
				return cur + 1, nil
			}
		}
		v, ok := prev["value"].(int64)
		if !ok {
			return 0, fmt.Errorf("cannot advance id counter %s: no current value returned", name)
		}
		cur, known = v, true
	}
	return 0, fmt.Errorf("cannot advance id counter %s: too much contention", name)
}

func ttlSeconds(ttl time.Duration) int {
	return max(1, int(math.Ceil(ttl.Seconds())))
}

// ClaimReqID implements store.Store: INSERT IF NOT EXISTS USING TTL. Expiry is judged as in
// every store, against claim.CreatedAt: a row the TTL has not yet removed but whose
// created_at + ttl is not after claim.CreatedAt is taken over with a compare-and-set.
func (s *Store) ClaimReqID(ctx context.Context, appID, reqID string, claim store.ReqClaim, ttl time.Duration) (store.ReqClaim, bool, error) {
	if claim.CreatedAt.IsZero() {
		claim.CreatedAt = time.Now()
	}
	created := claim.CreatedAt.Truncate(time.Millisecond)
	secs := ttlSeconds(ttl)
	// A claim whose outcome is unknown applied if the row at SERIAL is this claim.
	ours := func(ctx context.Context, prev map[string]any) (casState, error) {
		var (
			oid string
			at  time.Time
		)
		found, err := s.serialRow(ctx, cqlReqGet, []any{appID, reqID}, &oid, &at)
		prev["object_id"], prev["created_at"] = oid, at
		return stateOf(found, oid == claim.ObjectID && at.Equal(created)), err
	}
	for range maxCASRetries {
		prev := map[string]any{}
		applied, err := s.cas(ctx, s.q(ctx, cqlReqInsert, appID, reqID, claim.ObjectID, created, secs), prev, ours)
		if err != nil {
			return store.ReqClaim{}, false, fmt.Errorf("cannot claim req_id of app %s: %w", appID, err)
		}
		if applied {
			return claim, true, nil
		}
		p := claimFrom(prev)
		if p.CreatedAt.Add(ttl).After(claim.CreatedAt) {
			return p, false, nil
		}
		prev = map[string]any{}
		applied, err = s.cas(ctx, s.q(ctx, cqlReqCAS, secs, claim.ObjectID, created, appID, reqID, p.CreatedAt), prev, ours)
		if err != nil {
			return store.ReqClaim{}, false, fmt.Errorf("cannot claim req_id of app %s: %w", appID, err)
		}
		if applied {
			return claim, true, nil
		}
		// Someone else took it over, or the TTL removed it: look again.
	}
	return store.ReqClaim{}, false, fmt.Errorf("cannot claim req_id of app %s: too much contention", appID)
}

func claimFrom(m map[string]any) store.ReqClaim {
	var c store.ReqClaim
	c.ObjectID, _ = m["object_id"].(string)
	c.CreatedAt, _ = m["created_at"].(time.Time)
	return c
}

// AddDailyVolume implements store.Store with a counter column. The total read back may include
// other nodes' concurrent additions: it is the counter's value just after this one.
func (s *Store) AddDailyVolume(ctx context.Context, appID, day string, n int64) (int64, error) {
	if err := s.q(ctx, cqlVolumeAdd, n, appID, day).Exec(); err != nil {
		return 0, fmt.Errorf("cannot add to daily volume of app %s: %w", appID, err)
	}
	return s.DailyVolume(ctx, appID, day)
}

// DailyVolume implements store.Store; 0 for a day with no volume.
func (s *Store) DailyVolume(ctx context.Context, appID, day string) (int64, error) {
	var v int64
	if err := s.q(ctx, cqlVolumeGet, appID, day).Scan(&v); err != nil {
		if errors.Is(err, gocql.ErrNotFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("cannot read daily volume of app %s: %w", appID, err)
	}
	return v, nil
}

const cqlReqRelease = `DELETE FROM req_ids WHERE app_id = ? AND req_id = ? IF object_id = ?`

// ReleaseReqID implements store.Store with a conditional delete: only the claim's own push
// releases it. When its outcome is unknown, a SERIAL read that still finds the claim reports
// the release as failed.
func (s *Store) ReleaseReqID(ctx context.Context, appID, reqID, objectID string) error {
	var (
		oid string
		at  time.Time
	)
	released := func(ctx context.Context, _ map[string]any) (casState, error) {
		found, err := s.serialRow(ctx, cqlReqGet, []any{appID, reqID}, &oid, &at)
		if found && oid == objectID {
			return casNone, err // still held: the release failed
		}
		return casMine, err
	}
	if _, err := s.cas(ctx, s.q(ctx, cqlReqRelease, appID, reqID, objectID), map[string]any{}, released); err != nil {
		return fmt.Errorf("cannot release req_id claim of app %s: %w", appID, err)
	}
	return nil
}
