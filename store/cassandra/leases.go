package cassandra

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/store"
)

// Leases (CLUSTER.md: leases, LWT). The row of a lease is never deleted and carries no TTL: its
// epoch must outlive every tenure, or a lease taken again after its row expired would start
// over at epoch 1 and a paused holder of an old epoch 1 would pass the fence. Expiry is the
// expires column, judged at the caller's clock; every change is a compare-and-set on (owner,
// epoch), so two acquirers never both win whatever their clocks say.
const (
	cqlLeaseGet    = `SELECT owner, epoch, expires FROM leases WHERE name = ?`
	cqlLeaseInsert = `INSERT INTO leases (name, owner, epoch, expires) VALUES (?, ?, 1, ?) IF NOT EXISTS`
	cqlLeaseSet    = `UPDATE leases SET owner = ?, epoch = ?, expires = ? WHERE name = ? IF owner = ? AND epoch = ?`

	cqlSchedClaimGet = `SELECT slot, fired_epoch FROM scheduled_by_id WHERE app_id = ? AND id = ?`
	// The condition on slot keeps the update from creating a row that a firing or a cancel
	// deleted meanwhile (a missing row has no slot).
	cqlSchedClaim = `UPDATE scheduled_by_id SET fired_epoch = ? WHERE app_id = ? AND id = ? IF slot = ? AND fired_epoch = ?`
)

// serialRead is the consistency of a read that must see every applied LWT: LOCAL_SERIAL, the
// same protocol code as the serial consistency gocql types apart.
const serialRead = gocql.Consistency(gocql.LocalSerial)

type leaseRow struct {
	owner   string
	epoch   int64
	expires time.Time
	found   bool
}

func (r leaseRow) lease(name string) store.Lease {
	return store.Lease{Name: name, Owner: r.owner, Epoch: r.epoch, Expires: r.expires.UTC()}
}

// readLease reads the lease at SERIAL: it sees every applied LWT, including one whose
// coordinator timed out.
func (s *Store) readLease(ctx context.Context, name string) (leaseRow, error) {
	var r leaseRow
	err := s.q(ctx, cqlLeaseGet, name).Consistency(serialRead).Scan(&r.owner, &r.epoch, &r.expires)
	if errors.Is(err, gocql.ErrNotFound) {
		return r, nil
	}
	r.found = err == nil
	return r, err
}

// casLease writes next over cur (inserting when cur was not found) and says whether it
// applied. A timed-out LWT may have applied: the lease is read again at SERIAL to decide.
func (s *Store) casLease(ctx context.Context, name string, cur, next leaseRow) (bool, error) {
	var (
		applied bool
		err     error
	)
	if !cur.found {
		applied, err = s.q(ctx, cqlLeaseInsert, name, next.owner, next.expires).MapScanCAS(map[string]any{})
	} else {
		applied, err = s.q(ctx, cqlLeaseSet, next.owner, next.epoch, next.expires, name, cur.owner, cur.epoch).MapScanCAS(map[string]any{})
	}
	if err == nil || !casTimedOut(err) {
		return applied, err
	}
	now, rerr := s.readLease(ctx, name)
	if rerr != nil {
		return false, fmt.Errorf("%w (and the serial read after it: %v)", err, rerr)
	}
	return now.owner == next.owner && now.epoch == next.epoch && now.expires.Equal(next.expires), nil
}

// casTimedOut says whether err leaves an LWT's outcome unknown: it may have applied.
func casTimedOut(err error) bool { return casUnknown(err) }

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (store.Lease, bool, error) {
	now = now.Truncate(time.Millisecond)
	for range maxCASRetries {
		cur, err := s.readLease(ctx, name)
		if err != nil {
			return store.Lease{}, false, fmt.Errorf("cannot acquire lease %s: %w", name, err)
		}
		next := leaseRow{owner: owner, epoch: cur.epoch, expires: now.Add(ttl), found: true}
		switch {
		case !cur.found:
			next.epoch = 1
		case now.Before(cur.expires) && cur.owner == owner:
			if cur.expires.After(next.expires) {
				next.expires = cur.expires
			}
		case !now.Before(cur.expires):
			next.epoch = cur.epoch + 1
		default:
			return cur.lease(name), false, nil
		}
		applied, err := s.casLease(ctx, name, cur, next)
		if err != nil {
			return store.Lease{}, false, fmt.Errorf("cannot acquire lease %s: %w", name, err)
		}
		if applied {
			return next.lease(name), true, nil
		}
		// Another acquirer changed the lease: look again.
	}
	return store.Lease{}, false, fmt.Errorf("cannot acquire lease %s: contended past %d tries", name, maxCASRetries)
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, l store.Lease, now time.Time, ttl time.Duration) (store.Lease, error) {
	now = now.Truncate(time.Millisecond)
	cur, err := s.readLease(ctx, l.Name)
	if err != nil {
		return store.Lease{}, fmt.Errorf("cannot renew lease %s: %w", l.Name, err)
	}
	if !cur.found || cur.owner != l.Owner || cur.epoch != l.Epoch || !now.Before(cur.expires) {
		return cur.lease(l.Name), store.ErrLeaseLost
	}
	next := cur
	if e := now.Add(ttl); e.After(next.expires) {
		next.expires = e
	}
	applied, err := s.casLease(ctx, l.Name, cur, next)
	if err != nil {
		return store.Lease{}, fmt.Errorf("cannot renew lease %s: %w", l.Name, err)
	}
	if !applied { // a new tenure began between the read and the write
		return cur.lease(l.Name), store.ErrLeaseLost
	}
	return next.lease(l.Name), nil
}

// ReleaseLease implements store.Store: the lease expires at the epoch (1970), keeping its epoch.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	cur, err := s.readLease(ctx, l.Name)
	if err != nil {
		return fmt.Errorf("cannot release lease %s: %w", l.Name, err)
	}
	if !cur.found || cur.owner != l.Owner || cur.epoch != l.Epoch {
		return nil
	}
	next := cur
	next.expires = time.UnixMilli(0)
	if _, err := s.casLease(ctx, l.Name, cur, next); err != nil {
		return fmt.Errorf("cannot release lease %s: %w", l.Name, err)
	}
	return nil
}

// ClaimScheduled implements store.Store with an LWT on the schedule's scheduled_by_id row
// (CLUSTER.md: LWT for a scheduled push's firing), between two serial reads of the lease. An
// LWT covers one partition, so the claim cannot test the lease row itself; the read after it
// is what fences it: a serial read sees every acquisition applied before it, so a claim
// confirmed by it was recorded while l was the lease's tenure, and a holder that lost the
// lease is refused whether or not the next holder claimed this schedule already. The read
// before it only keeps a stale epoch off the row.
func (s *Store) ClaimScheduled(ctx context.Context, l store.Lease, appID string, id int64) error {
	if err := s.checkTenure(ctx, l, appID, id); err != nil {
		return err
	}
	for range maxCASRetries {
		var (
			slot  int
			prev  *int64
			claim int64
		)
		err := s.q(ctx, cqlSchedClaimGet, appID, id).Consistency(serialRead).Scan(&slot, &prev)
		if err != nil {
			if err = notFound(err); errors.Is(err, store.ErrNotFound) {
				return err
			}
			return fmt.Errorf("cannot claim scheduled push %d of app %s: %w", id, appID, err)
		}
		if prev != nil {
			claim = *prev
			switch {
			case claim > l.Epoch:
				return store.ErrLeaseLost
			case claim == l.Epoch:
				return s.checkTenure(ctx, l, appID, id)
			}
		}
		applied, err := s.q(ctx, cqlSchedClaim, l.Epoch, appID, id, slot, prev).MapScanCAS(map[string]any{})
		if err != nil && !casTimedOut(err) {
			return fmt.Errorf("cannot claim scheduled push %d of app %s: %w", id, appID, err)
		}
		if applied {
			return s.checkTenure(ctx, l, appID, id)
		}
		// Changed meanwhile, or timed out: the serial read above decides on the next round.
	}
	return fmt.Errorf("cannot claim scheduled push %d of app %s: contended past %d tries", id, appID, maxCASRetries)
}

// checkTenure reads lease l at SERIAL and refuses (ErrLeaseLost) when another tenure holds it.
func (s *Store) checkTenure(ctx context.Context, l store.Lease, appID string, id int64) error {
	cur, err := s.readLease(ctx, l.Name)
	if err != nil {
		return fmt.Errorf("cannot claim scheduled push %d of app %s: %w", id, appID, err)
	}
	if !cur.found || cur.owner != l.Owner || cur.epoch != l.Epoch {
		return store.ErrLeaseLost
	}
	return nil
}
