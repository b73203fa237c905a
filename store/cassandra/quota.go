package cassandra

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/push"
)

// Vendor quotas (issue 20 item 2). vendor_quotas is a counter, like call_counts: the
// reservation adds want, reads the total back and grants what fitted under the limit, so two
// nodes racing at the limit may grant less than would fit, never more. A spent day (the
// vendor said so) is the counter pushed past any limit. Counters carry no TTL: a row per app,
// budget and active day stays (a few bytes).
//
// deferred holds the targets a spent quota holds until their window ends, spread over
// deferSlots partitions (slot = hash of the target) so one big deferral is no hot partition;
// each row expires (TTL) when its push does, a day after its window when the push never does.
const (
	cqlQuotaAdd = `UPDATE vendor_quotas SET used = used + ? WHERE app_id = ? AND budget = ? AND day = ?`
	cqlQuotaGet = `SELECT used FROM vendor_quotas WHERE app_id = ? AND budget = ? AND day = ?`

	cqlDeferredPut    = `INSERT INTO deferred (slot, until, app_id, vendor, target, doc) VALUES (?, ?, ?, ?, ?, ?) USING TTL ?`
	cqlDeferredDue    = `SELECT doc FROM deferred WHERE slot = ? AND until <= ? LIMIT ?`
	cqlDeferredDelete = `DELETE FROM deferred WHERE slot = ? AND until = ? AND app_id = ? AND vendor = ? AND target = ?`
)

// deferSlots is the number of deferred partitions: enough to spread a push's deferral over
// the nodes of a cluster, few enough that a look reads each once.
const deferSlots = 16

// quotaSpent is added to a day's counter the vendor called spent: above any limit.
const quotaSpent = math.MaxInt64 / 4

func deferSlot(d *push.Deferred) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(d.AppID))
	_, _ = h.Write([]byte(d.Key()))
	return int(h.Sum32() % deferSlots)
}

// ReserveVendorQuota implements store.Store with the vendor_quotas counter.
func (s *Store) ReserveVendorQuota(ctx context.Context, appID, budget, day string, want, limit int64, until time.Time) (int64, error) {
	if want <= 0 {
		return 0, nil
	}
	if err := s.q(ctx, cqlQuotaAdd, want, appID, budget, day).Exec(); err != nil {
		return 0, fmt.Errorf("cannot count the %s quota of app %s: %w", budget, appID, err)
	}
	var total int64
	if err := s.q(ctx, cqlQuotaGet, appID, budget, day).Scan(&total); err != nil {
		return 0, fmt.Errorf("cannot read the %s quota of app %s: %w", budget, appID, err)
	}
	over := max(0, total-limit)
	return max(0, want-over), nil
}

// SpendVendorQuota implements store.Store.
func (s *Store) SpendVendorQuota(ctx context.Context, appID, budget, day string, until time.Time) error {
	if err := s.q(ctx, cqlQuotaAdd, int64(quotaSpent), appID, budget, day).Exec(); err != nil {
		return fmt.Errorf("cannot mark the %s quota of app %s spent: %w", budget, appID, err)
	}
	return nil
}

// deferredTTL is how long a deferred row lives: until its push expires, or a day past its
// window when it never does (the re-driver takes it within moments of the window's end).
func deferredTTL(d *push.Deferred, now time.Time) int {
	end := d.Until.Add(24 * time.Hour)
	if exp := d.Expires(); !exp.IsZero() && exp.Before(end) {
		end = exp.Add(time.Minute) // the re-driver counts it expired: let it see the row
	}
	return ttlSeconds(end.Sub(now))
}

// PutDeferred implements store.Store: one logged batch, so the rows are all written or none.
func (s *Store) PutDeferred(ctx context.Context, ds []push.Deferred) error {
	if len(ds) == 0 {
		return nil
	}
	now := time.Now()
	b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	for i := range ds {
		d := &ds[i]
		doc, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("cannot encode a deferred target of push %s: %w", d.PushID, err)
		}
		b.Query(cqlDeferredPut, deferSlot(d), d.Until, d.AppID, d.Vendor, d.Key(), doc, deferredTTL(d, now))
	}
	if err := s.s.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cannot write %d deferred targets of app %s: %w", len(ds), ds[0].AppID, err)
	}
	return nil
}

// DueDeferred implements store.Store: each slot's due rows, merged oldest window first.
func (s *Store) DueDeferred(ctx context.Context, before time.Time, limit int) ([]push.Deferred, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []push.Deferred
	for slot := range deferSlots {
		it := s.q(ctx, cqlDeferredDue, slot, before, limit).Iter()
		var doc []byte
		for it.Scan(&doc) {
			var d push.Deferred
			if err := json.Unmarshal(doc, &d); err != nil {
				_ = it.Close()
				return nil, fmt.Errorf("cannot decode a deferred target: %w", err)
			}
			out = append(out, d)
		}
		if err := it.Close(); err != nil {
			return nil, fmt.Errorf("cannot list due deferred targets of slot %d: %w", slot, err)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Until.Before(out[j].Until) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// DeleteDeferred implements store.Store.
func (s *Store) DeleteDeferred(ctx context.Context, ds []push.Deferred) error {
	if len(ds) == 0 {
		return nil
	}
	b := s.s.NewBatch(gocql.LoggedBatch).WithContext(ctx)
	for i := range ds {
		d := &ds[i]
		b.Query(cqlDeferredDelete, deferSlot(d), d.Until, d.AppID, d.Vendor, d.Key())
	}
	if err := s.s.ExecuteBatch(b); err != nil {
		return fmt.Errorf("cannot delete %d deferred targets of app %s: %w", len(ds), ds[0].AppID, err)
	}
	return nil
}
