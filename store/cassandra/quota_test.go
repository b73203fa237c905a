package cassandra

import (
	"context"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// vendorQuotaCases are TestStoreCassandraStatements' cases for the vendor quota statements
// (issue 20 item 2): the counter added once and read back, a spent day pushed past any limit,
// deferred rows written in one batch with a TTL ending with their push, listed per slot, and
// deleted by their whole key.
func vendorQuotaCases(t *testing.T) {
	ctx := context.Background()
	t.Run("vendor quota: added once (no retry), read back, what fitted granted", func(t *testing.T) {
		var granted int64
		calls, err := runCase(t, script{cqlQuotaGet: fixed(reply{row: []any{int64(505)}})}, func(s *Store) error {
			var err error
			granted, err = s.ReserveVendorQuota(ctx, "a", "vivo/system", "2026-11-25", 10, 500, t0)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if granted != 5 {
			t.Errorf("granted %d of 10 with 505 counted against 500, want 5", granted)
		}
		wantCalls(t, calls, one("exec", cqlQuotaAdd, int64(10), "a", "vivo/system", "2026-11-25"),
			one("scan", cqlQuotaGet, "a", "vivo/system", "2026-11-25"))
		if calls[0].retry != nil {
			t.Errorf("the counter update runs with retry policy %v", calls[0].retry)
		}
		calls, err = runCase(t, script{}, func(s *Store) error {
			return s.SpendVendorQuota(ctx, "a", "vivo/system", "2026-11-25", t0)
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, one("exec", cqlQuotaAdd, int64(quotaSpent), "a", "vivo/system", "2026-11-25"))
	})

	t.Run("deferred: one batch with a TTL at the push's expiry, listed per slot, deleted by key", func(t *testing.T) {
		until := time.Now().Add(time.Hour).UTC()
		d := push.Deferred{AppID: "a", Vendor: "vivo", Until: until, PushID: "p1",
			Target:  push.Target{ObjectID: "o1", Channel: "vivo", DeviceID: "r1"},
			Message: &push.Message{Expiration: until.Add(2 * time.Hour)}}
		calls, err := runCase(t, script{}, func(s *Store) error { return s.PutDeferred(ctx, []push.Deferred{d}) })
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, inBatch(b(cqlDeferredPut, deferSlot(&d), until, "a", "vivo", d.Key(), anyv, anyv)))
		if ttl, ok := calls[0].batch[0].args[6].(int); !ok || ttl < 3*3600 || ttl > 3*3600+61 {
			t.Errorf("deferred row TTL %v, want its push's expiry (3 h) plus a minute", calls[0].batch[0].args[6])
		}
		calls, err = runCase(t, script{}, func(s *Store) error { _, err := s.DueDeferred(ctx, until, 10); return err })
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != deferSlots {
			t.Errorf("DueDeferred made %d calls, want one per slot (%d)", len(calls), deferSlots)
		}
		calls, err = runCase(t, script{}, func(s *Store) error { return s.DeleteDeferred(ctx, []push.Deferred{d}) })
		if err != nil {
			t.Fatal(err)
		}
		wantCalls(t, calls, inBatch(b(cqlDeferredDelete, deferSlot(&d), until, "a", "vivo", d.Key())))
	})
}
