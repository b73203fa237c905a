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

// req_ids value: createdAt (int64 ns), expiresAt (int64 ns), objectId.
func appendClaim(dst []byte, c store.ReqClaim, expires time.Time) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(c.CreatedAt.UnixNano()))
	dst = binary.BigEndian.AppendUint64(dst, uint64(expires.UnixNano()))
	return append(dst, c.ObjectID...)
}

func decodeClaim(v []byte) (store.ReqClaim, time.Time, bool) {
	if len(v) < 16 {
		return store.ReqClaim{}, time.Time{}, false
	}
	c := store.ReqClaim{
		CreatedAt: time.Unix(0, int64(binary.BigEndian.Uint64(v))),
		ObjectID:  string(v[16:]),
	}
	return c, time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))), true
}

// ClaimReqID implements store.Store. Expiry is judged against claim.CreatedAt (the caller's
// now; Options.Now when zero): a claim is live while claim.CreatedAt is before the previous
// claim's CreatedAt + ttl. Expired claims are overwritten, and swept (SweepReqIDs).
func (s *Store) ClaimReqID(ctx context.Context, appID, reqID string, claim store.ReqClaim, ttl time.Duration) (store.ReqClaim, bool, error) {
	return s.claimReqID(appID, reqID, claim, ttl, pebble.Sync)
}

// ClaimReqIDNoSync is ClaimReqID without waiting for the claim's fsync: the claim is visible
// at once and durable once a later synced write to this DB returns, as for
// CreateNotificationNoSync (commit.go). pushapi uses it when the push's job, appended after it
// to queue/embedded on DB(), is that write: a claim lost in a crash is lost with its record and
// its job, and the retry then claims the req_id anew, where a claim kept alone is taken over.
// The call waited for two fsyncs in a row before (the claim's, then the job's).
func (s *Store) ClaimReqIDNoSync(ctx context.Context, appID, reqID string, claim store.ReqClaim, ttl time.Duration) (store.ReqClaim, bool, error) {
	return s.claimReqID(appID, reqID, claim, ttl, pebble.NoSync)
}

func (s *Store) claimReqID(appID, reqID string, claim store.ReqClaim, ttl time.Duration, wo *pebble.WriteOptions) (store.ReqClaim, bool, error) {
	if err := s.enter(); err != nil {
		return store.ReqClaim{}, false, err
	}
	defer s.exit()
	if claim.CreatedAt.IsZero() {
		claim.CreatedAt = s.now()
	}
	defer s.locks.lock(stripeOf("r", appID, reqID))()
	key := reqIDKey(nil, appID, reqID)
	if prev, live, err := s.liveClaim(appID, key, claim.CreatedAt); err != nil || live {
		return prev, false, err
	}
	expires := claim.CreatedAt.Add(ttl)
	if err := s.db.Set(key, appendClaim(nil, claim, expires), wo); err != nil {
		return store.ReqClaim{}, false, fmt.Errorf("cannot claim req_id of app %s: %w", appID, err)
	}
	s.claims.add(key, expires, s.now())
	return claim, true, nil
}

// liveClaim returns the claim stored under key, the req_id claim row of a caller holding its
// stripe, when it is still live at time at (at before its expiry). A key the memo vouches for
// is not read.
func (s *Store) liveClaim(appID string, key []byte, at time.Time) (store.ReqClaim, bool, error) {
	if !s.claims.mayHold(key, at) { // no claim is live: nothing to read (claims.go)
		return store.ReqClaim{}, false, nil
	}
	if s.afterClaimRead != nil {
		s.afterClaimRead()
	}
	v, found, err := s.getInto(nil, key)
	if err != nil {
		return store.ReqClaim{}, false, fmt.Errorf("cannot read req_id claim of app %s: %w", appID, err)
	}
	if !found {
		return store.ReqClaim{}, false, nil
	}
	if prev, expires, ok := decodeClaim(v); ok && at.Before(expires) {
		return prev, true, nil
	}
	return store.ReqClaim{}, false, nil
}

// CreateNotificationWith writes n (an objectId the caller has just generated: no record is
// looked for, as for CreateNewNotificationNoSync), the claim of its req_id when it has one (for
// its objectId and createdAt, checked as ClaimReqID checks), and the rows also adds to the
// batch, in one synced commit: all durable when it returns, or none of them. A live claim of
// another call wins: returned with claimed false, and nothing is written (also is not called).
// Without a req_id, claimed is true. also must only add to the batch (Batch.Set and friends).
//
// internal/jointaccept uses it with queue/embedded's Prepared.Write, the push's job, so that a
// push's claim, record and job are one write.
func (s *Store) CreateNotificationWith(ctx context.Context, n push.Notification, ttl time.Duration, also func(*pebble.Batch)) (prev store.ReqClaim, claimed bool, err error) {
	if err := s.enter(); err != nil {
		return store.ReqClaim{}, false, err
	}
	defer s.exit()
	if n.ObjectID == "" || n.AppID == "" || n.CreatedAt.IsZero() {
		return store.ReqClaim{}, false, errors.New("cannot create a push record without appId, objectId and createdAt")
	}
	claim := store.ReqClaim{ObjectID: n.ObjectID, CreatedAt: n.CreatedAt}
	stripes := append(make([]int, 0, 2), stripeOf("n", n.AppID, n.ObjectID))
	if n.ReqID != "" {
		stripes = append(stripes, stripeOf("r", n.AppID, n.ReqID))
	}
	unlock := s.locks.lockAll(stripes)
	defer unlock()
	var kb [keyBuf]byte
	var key []byte
	if n.ReqID != "" {
		key = reqIDKey(kb[:0], n.AppID, n.ReqID)
		if prev, live, err := s.liveClaim(n.AppID, key, claim.CreatedAt); err != nil || live {
			return prev, false, err
		}
	}
	b, doc, err := s.newNotificationBatch(&n)
	if err != nil {
		return store.ReqClaim{}, false, fmt.Errorf("cannot create push record %s of app %s: %w", n.ObjectID, n.AppID, err)
	}
	defer b.Close()
	expires := claim.CreatedAt.Add(ttl)
	if key != nil {
		var vb [keyBuf]byte
		if err := b.Set(key, appendClaim(vb[:0], claim, expires), nil); err != nil {
			return store.ReqClaim{}, false, fmt.Errorf("cannot claim req_id of app %s: %w", n.AppID, err)
		}
	}
	if also != nil {
		also(b)
	}
	if err := s.commitRecord(b, pebble.Sync, &n, doc, true); err != nil {
		return store.ReqClaim{}, false, fmt.Errorf("cannot create push record %s of app %s: %w", n.ObjectID, n.AppID, err)
	}
	if key != nil {
		s.claims.add(key, expires, s.now())
	}
	return claim, true, nil
}

// AddDailyVolume implements store.Store: read, add, synced write under the counter's stripe.
func (s *Store) AddDailyVolume(ctx context.Context, appID, day string, n int64) (int64, error) {
	return s.addDailyVolume(appID, day, n, pebble.Sync)
}

// AddDailyVolumeNoSync is AddDailyVolume without the fsync: the addition is durable with the
// next synced write of the store (fanout.VolumeNoSync).
func (s *Store) AddDailyVolumeNoSync(ctx context.Context, appID, day string, n int64) (int64, error) {
	return s.addDailyVolume(appID, day, n, pebble.NoSync)
}

func (s *Store) addDailyVolume(appID, day string, n int64, opt *pebble.WriteOptions) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("v", appID, day))()
	key := volumeKey(nil, appID, day)
	cur, err := s.readInt64(key)
	if err != nil {
		return 0, fmt.Errorf("cannot read daily volume of app %s: %w", appID, err)
	}
	total := cur + n
	if err := s.db.Set(key, binary.BigEndian.AppendUint64(nil, uint64(total)), opt); err != nil {
		return 0, fmt.Errorf("cannot add to daily volume of app %s: %w", appID, err)
	}
	return total, nil
}

// DailyVolume implements store.Store; 0 for a day with no volume.
func (s *Store) DailyVolume(ctx context.Context, appID, day string) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	v, err := s.readInt64(volumeKey(nil, appID, day))
	if err != nil {
		return 0, fmt.Errorf("cannot read daily volume of app %s: %w", appID, err)
	}
	return v, nil
}

func (s *Store) readInt64(key []byte) (int64, error) {
	var buf [8]byte
	v, found, err := s.getInto(buf[:0], key)
	if err != nil || !found {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("counter of %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// ReleaseReqID implements store.Store: it removes the claim of reqID only while it is still
// objectID's, so a push that failed after claiming can be retried with the same req_id.
func (s *Store) ReleaseReqID(ctx context.Context, appID, reqID, objectID string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("r", appID, reqID))()
	key := reqIDKey(nil, appID, reqID)
	v, found, err := s.getInto(nil, key)
	if err != nil {
		return fmt.Errorf("cannot read req_id claim of app %s: %w", appID, err)
	}
	if !found {
		return nil
	}
	if prev, _, ok := decodeClaim(v); ok && prev.ObjectID != objectID {
		return nil
	}
	if err := s.db.Delete(key, pebble.Sync); err != nil {
		return fmt.Errorf("cannot release req_id claim of app %s: %w", appID, err)
	}
	return nil
}
