package cassandra

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/store"
)

// A scheduled push's claim is fenced by the lease's tenure, read at SERIAL around the LWT on the
// schedule's row (an LWT cannot test another partition): a holder whose lease passed to another
// node claims nothing, even a schedule the new holder has not claimed yet.
func TestStoreCassandraClaimScheduledFencedByTheLease(t *testing.T) {
	ctx := context.Background()
	l := store.Lease{Name: "scheduler", Owner: "n1", Epoch: 3}
	lease := func(epochs ...int64) func(*call) reply {
		return func(*call) reply {
			e := epochs[0]
			if len(epochs) > 1 {
				epochs = epochs[1:]
			}
			owner := "n1"
			if e != l.Epoch {
				owner = "n2"
			}
			return reply{row: []any{owner, e, t0.Add(time.Minute)}}
		}
	}
	unclaimed := fixed(reply{row: []any{3, (*int64)(nil)}})

	t.Run("held throughout: claimed, then confirmed", func(t *testing.T) {
		calls, err := runCase(t, script{cqlLeaseGet: lease(3), cqlSchedClaimGet: unclaimed},
			func(s *Store) error { return s.ClaimScheduled(ctx, l, "a", 19) })
		if err != nil {
			t.Fatalf("ClaimScheduled: %v", err)
		}
		wantCalls(t, calls,
			one("scan", cqlLeaseGet, "scheduler"),
			one("scan", cqlSchedClaimGet, "a", int64(19)),
			one("cas", cqlSchedClaim, int64(3), "a", int64(19), 3, (*int64)(nil)),
			one("scan", cqlLeaseGet, "scheduler"))
	})
	t.Run("lost before: the schedule's row is not touched", func(t *testing.T) {
		calls, err := runCase(t, script{cqlLeaseGet: lease(4), cqlSchedClaimGet: unclaimed},
			func(s *Store) error { return s.ClaimScheduled(ctx, l, "a", 19) })
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("ClaimScheduled = %v, want lease lost", err)
		}
		wantCalls(t, calls, one("scan", cqlLeaseGet, "scheduler"))
	})
	t.Run("lost while claiming: refused after the LWT", func(t *testing.T) {
		calls, err := runCase(t, script{cqlLeaseGet: lease(3, 4), cqlSchedClaimGet: unclaimed},
			func(s *Store) error { return s.ClaimScheduled(ctx, l, "a", 19) })
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("ClaimScheduled = %v, want lease lost", err)
		}
		wantCalls(t, calls,
			one("scan", cqlLeaseGet, "scheduler"),
			one("scan", cqlSchedClaimGet, "a", int64(19)),
			one("cas", cqlSchedClaim, int64(3), "a", int64(19), 3, (*int64)(nil)),
			one("scan", cqlLeaseGet, "scheduler"))
	})
}
