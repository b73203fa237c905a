package pebble

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/store"
)

// leaseRow is a lease's value: the epoch outlives every tenure, so that it never repeats.
type leaseRow struct {
	Owner     string `json:"owner"`
	Epoch     int64  `json:"epoch"`
	ExpiresMs int64  `json:"expires"` // unix ms; 0 once released
}

func (r leaseRow) lease(name string) store.Lease {
	return store.Lease{Name: name, Owner: r.Owner, Epoch: r.Epoch, Expires: time.UnixMilli(r.ExpiresMs).UTC()}
}

// readLease reads the lease row; s.leaseMu is held.
func (s *Store) readLease(name string) (leaseRow, error) {
	var r leaseRow
	v, err := s.get(leaseKey(nil, name))
	if errors.Is(err, store.ErrNotFound) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return r, fmt.Errorf("cannot decode lease %s: %w", name, err)
	}
	return r, nil
}

// writeLease writes the lease row, synced; s.leaseMu is held.
func (s *Store) writeLease(name string, r leaseRow) error {
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("BUG: cannot encode lease %s: %w", name, err)
	}
	return s.db.Set(leaseKey(nil, name), v, pebble.Sync)
}

// AcquireLease implements store.Store: one compare-and-set at a time under leaseMu, the
// single-process equivalent of store/cassandra's LWT.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (store.Lease, bool, error) {
	if err := s.enter(); err != nil {
		return store.Lease{}, false, err
	}
	defer s.exit()
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	cur, err := s.readLease(name)
	if err != nil {
		return store.Lease{}, false, fmt.Errorf("cannot acquire lease %s: %w", name, err)
	}
	nowMs := now.UnixMilli()
	next := leaseRow{Owner: owner, Epoch: cur.Epoch, ExpiresMs: max(cur.ExpiresMs, now.Add(ttl).UnixMilli())}
	switch {
	case nowMs < cur.ExpiresMs && cur.Owner == owner: // held by owner: extended
	case nowMs >= cur.ExpiresMs: // free: a new tenure
		next.Epoch, next.ExpiresMs = cur.Epoch+1, now.Add(ttl).UnixMilli()
	default:
		return cur.lease(name), false, nil
	}
	if err := s.writeLease(name, next); err != nil {
		return store.Lease{}, false, fmt.Errorf("cannot acquire lease %s: %w", name, err)
	}
	return next.lease(name), true, nil
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, l store.Lease, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := s.enter(); err != nil {
		return store.Lease{}, err
	}
	defer s.exit()
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	cur, err := s.readLease(l.Name)
	if err != nil {
		return store.Lease{}, fmt.Errorf("cannot renew lease %s: %w", l.Name, err)
	}
	if cur.Owner != l.Owner || cur.Epoch != l.Epoch || now.UnixMilli() >= cur.ExpiresMs {
		return cur.lease(l.Name), store.ErrLeaseLost
	}
	cur.ExpiresMs = max(cur.ExpiresMs, now.Add(ttl).UnixMilli())
	if err := s.writeLease(l.Name, cur); err != nil {
		return store.Lease{}, fmt.Errorf("cannot renew lease %s: %w", l.Name, err)
	}
	return cur.lease(l.Name), nil
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	cur, err := s.readLease(l.Name)
	if err != nil {
		return fmt.Errorf("cannot release lease %s: %w", l.Name, err)
	}
	if cur.Owner != l.Owner || cur.Epoch != l.Epoch {
		return nil
	}
	cur.ExpiresMs = 0
	if err := s.writeLease(l.Name, cur); err != nil {
		return fmt.Errorf("cannot release lease %s: %w", l.Name, err)
	}
	return nil
}

// ClaimScheduled implements store.Store under the schedule's stripe, which DeleteScheduled
// takes too, and then leaseMu: the lease's tenure is checked and the claim written with no
// acquisition in between, as one compare-and-set on the lease would.
func (s *Store) ClaimScheduled(ctx context.Context, l store.Lease, appID string, id int64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("s", appID, fmt.Sprint(id)))()
	if _, found, err := s.getInto(nil, schedKey(nil, appID, id)); err != nil {
		return fmt.Errorf("cannot claim scheduled push %d of app %s: %w", id, appID, err)
	} else if !found {
		return store.ErrNotFound
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	cur, err := s.readLease(l.Name)
	if err != nil {
		return fmt.Errorf("cannot claim scheduled push %d of app %s: %w", id, appID, err)
	}
	if cur.Owner != l.Owner || cur.Epoch != l.Epoch {
		return store.ErrLeaseLost // the lease passed to another tenure
	}
	key := schedClaimKey(nil, appID, id)
	v, found, err := s.getInto(nil, key)
	if err != nil {
		return fmt.Errorf("cannot claim scheduled push %d of app %s: %w", id, appID, err)
	}
	if found {
		if len(v) != 8 {
			return fmt.Errorf("cannot claim scheduled push %d of app %s: %d-byte epoch", id, appID, len(v))
		}
		switch prev := int64(binary.BigEndian.Uint64(v)); {
		case prev > l.Epoch:
			return store.ErrLeaseLost
		case prev == l.Epoch:
			return nil
		}
	}
	if err := s.db.Set(key, binary.BigEndian.AppendUint64(nil, uint64(l.Epoch)), pebble.Sync); err != nil {
		return fmt.Errorf("cannot claim scheduled push %d of app %s: %w", id, appID, err)
	}
	return nil
}

// releaseLeases frees, at Open, every lease an earlier process of this directory held: the
// directory lock says that process is gone, and its leases would only hold this one's work
// (scheduled pushes after a crash) until they expired. Their epochs stay, so a write that
// process still had in flight could not pass a fence.
func (s *Store) releaseLeases() error {
	b := s.db.NewBatch()
	defer b.Close()
	err := s.iterate([]byte{tLease}, []byte{tLease + 1}, func(k, v []byte) error {
		var r leaseRow
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("cannot decode a lease: %w", err)
		}
		if r.ExpiresMs == 0 {
			return nil
		}
		r.ExpiresMs = 0
		nv, err := json.Marshal(r)
		if err != nil {
			return err
		}
		return b.Set(k, nv, nil) // Set copies k
	})
	if err != nil {
		return fmt.Errorf("cannot release the leases of an earlier process: %w", err)
	}
	if b.Empty() {
		return nil
	}
	return b.Commit(pebble.Sync)
}
