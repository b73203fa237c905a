package pebble

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
)

// Vendor quotas (issue 20 item 2).
//
//	'Q' app budget                     → count, day   (vendor_quotas: only the current day is kept)
//	'D' until app vendor pushId target → Deferred JSON (deferred, by window end)
const (
	tVendorQuota = 'Q'
	tDeferred    = 'D'
)

// quotaSpent is the count of a day the vendor called spent: above any limit.
const quotaSpent = math.MaxInt64 / 2

func vendorQuotaKey(dst []byte, app, budget string) []byte {
	return appendStr(appendStr(append(dst, tVendorQuota), app), budget)
}

func deferredKey(dst []byte, d *push.Deferred) []byte {
	dst = appendInt64(append(dst, tDeferred), d.Until.UnixNano())
	dst = appendStr(appendStr(dst, d.AppID), d.Vendor)
	return appendStr(dst, d.Key())
}

// readQuota returns the stored count of budget for day: 0 when the row holds an earlier day.
// A row of a later day (a node whose clock lags) counts against that later day.
func (s *Store) readQuota(key []byte, day string) (string, int64, error) {
	v, found, err := s.getInto(nil, key)
	if err != nil || !found || len(v) < 8 {
		return day, 0, err
	}
	stored := string(v[8:])
	if stored < day {
		return day, 0, nil
	}
	return stored, int64(binary.BigEndian.Uint64(v)), nil
}

func (s *Store) writeQuota(key []byte, day string, count int64) error {
	v := binary.BigEndian.AppendUint64(nil, uint64(count))
	return s.db.Set(key, append(v, day...), pebble.NoSync)
}

// ReserveVendorQuota implements store.Store: read, clamp, write under the budget's stripe.
// Like the call counts, not synced: the WAL is written before the call returns.
func (s *Store) ReserveVendorQuota(ctx context.Context, appID, budget, day string, want, limit int64, until time.Time) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	if want <= 0 {
		return 0, nil
	}
	defer s.locks.lock(stripeOf("Q", appID, budget))()
	key := vendorQuotaKey(nil, appID, budget)
	day, count, err := s.readQuota(key, day)
	if err != nil {
		return 0, fmt.Errorf("cannot read the %s quota of app %s: %w", budget, appID, err)
	}
	granted := min(want, limit-count)
	if granted <= 0 {
		return 0, nil
	}
	if err := s.writeQuota(key, day, count+granted); err != nil {
		return 0, fmt.Errorf("cannot count the %s quota of app %s: %w", budget, appID, err)
	}
	return granted, nil
}

// SpendVendorQuota implements store.Store.
func (s *Store) SpendVendorQuota(ctx context.Context, appID, budget, day string, until time.Time) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	defer s.locks.lock(stripeOf("Q", appID, budget))()
	key := vendorQuotaKey(nil, appID, budget)
	day, _, err := s.readQuota(key, day)
	if err != nil {
		return fmt.Errorf("cannot read the %s quota of app %s: %w", budget, appID, err)
	}
	if err := s.writeQuota(key, day, quotaSpent); err != nil {
		return fmt.Errorf("cannot mark the %s quota of app %s spent: %w", budget, appID, err)
	}
	return nil
}

// PutDeferred implements store.Store: one synced batch, so a task checkpointed after it
// never counts a deferred target whose row a crash lost.
func (s *Store) PutDeferred(ctx context.Context, ds []push.Deferred) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	return s.deferredBatch(ds, "write", func(b *pebble.Batch, d *push.Deferred) error {
		v, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("cannot encode a deferred target of push %s: %w", d.PushID, err)
		}
		return b.Set(deferredKey(nil, d), v, nil)
	})
}

// DueDeferred implements store.Store.
func (s *Store) DueDeferred(ctx context.Context, before time.Time, limit int) ([]push.Deferred, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	if limit <= 0 {
		return nil, nil
	}
	lower := []byte{tDeferred}
	upper := appendInt64([]byte{tDeferred}, before.UnixNano()+1) // inclusive of before
	var out []push.Deferred
	err := s.iterate(lower, upper, func(_, v []byte) error {
		var d push.Deferred
		if err := json.Unmarshal(v, &d); err != nil {
			return err
		}
		out = append(out, d)
		if len(out) >= limit {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("cannot list due deferred targets: %w", err)
	}
	return out, nil
}

// DeleteDeferred implements store.Store.
func (s *Store) DeleteDeferred(ctx context.Context, ds []push.Deferred) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	return s.deferredBatch(ds, "delete", func(b *pebble.Batch, d *push.Deferred) error {
		return b.Delete(deferredKey(nil, d), nil)
	})
}

// deferredBatch applies op to each of ds in one synced batch; verb names the change in the error.
func (s *Store) deferredBatch(ds []push.Deferred, verb string, op func(*pebble.Batch, *push.Deferred) error) error {
	if len(ds) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for i := range ds {
		if err := op(b, &ds[i]); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot %s %d deferred targets of app %s: %w", verb, len(ds), ds[0].AppID, err)
	}
	return nil
}
