package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Lease tests give every call its now: expiry is judged at the caller's clock, so no test
// waits for a lease to run out.

const leaseTTL = 10 * time.Second

func acquire(t *testing.T, s store.Store, name, owner string, now time.Time) (store.Lease, bool) {
	t.Helper()
	l, ok, err := s.AcquireLease(bg, name, owner, now, leaseTTL)
	if err != nil {
		t.Fatalf("AcquireLease(%s, %s): %v", name, owner, err)
	}
	return l, ok
}

func testLeaseAcquire(t *testing.T, s store.Store) {
	name, now := uniq("lease"), ms(time.Now()).UTC()
	a, ok := acquire(t, s, name, "a", now)
	if !ok || a.Owner != "a" || a.Epoch != 1 || a.Name != name || !a.Expires.Equal(now.Add(leaseTTL)) {
		t.Fatalf("first AcquireLease = %+v, %v; want a's, epoch 1, until now+ttl", a, ok)
	}
	b, ok := acquire(t, s, name, "b", now.Add(time.Second))
	if ok || b.Owner != "a" || b.Epoch != 1 {
		t.Errorf("AcquireLease of a held lease = %+v, %v; want a's lease, not ok", b, ok)
	}
	// The holder acquiring again extends its lease and keeps its epoch.
	a2, ok := acquire(t, s, name, "a", now.Add(5*time.Second))
	if !ok || a2.Epoch != 1 || !a2.Expires.Equal(now.Add(15*time.Second)) {
		t.Errorf("AcquireLease by the holder = %+v, %v; want epoch 1 until now+15s", a2, ok)
	}
	// Another lease name is another lease.
	if o, ok := acquire(t, s, uniq("lease"), "b", now); !ok || o.Epoch != 1 {
		t.Errorf("AcquireLease of another name = %+v, %v", o, ok)
	}
}

func testLeaseRenewExpiry(t *testing.T, s store.Store) {
	name, now := uniq("lease"), ms(time.Now()).UTC()
	a, _ := acquire(t, s, name, "a", now)
	a, err := s.RenewLease(bg, a, now.Add(8*time.Second), leaseTTL)
	if err != nil || a.Epoch != 1 || !a.Expires.Equal(now.Add(18*time.Second)) {
		t.Fatalf("RenewLease = %+v, %v; want epoch 1 until now+18s", a, err)
	}
	if b, ok := acquire(t, s, name, "b", now.Add(18*time.Second-time.Millisecond)); ok {
		t.Fatalf("AcquireLease a millisecond before expiry = %+v, ok", b)
	}
	// Expired at its Expires: the next acquirer gets the next epoch, and the old holder's
	// renewal is refused.
	b, ok := acquire(t, s, name, "b", now.Add(18*time.Second))
	if !ok || b.Owner != "b" || b.Epoch != 2 {
		t.Fatalf("AcquireLease at expiry = %+v, %v; want b's, epoch 2", b, ok)
	}
	if _, err := s.RenewLease(bg, a, now.Add(19*time.Second), leaseTTL); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("RenewLease of a lost lease = %v, want ErrLeaseLost", err)
	}
	// An expired holder cannot renew even when nobody took over, and taking the lease again
	// after its expiry is a new tenure.
	far := now.Add(time.Hour)
	if _, err := s.RenewLease(bg, b, far, leaseTTL); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("RenewLease after expiry = %v, want ErrLeaseLost", err)
	}
	b2, ok := acquire(t, s, name, "b", far)
	if !ok || b2.Epoch != 3 {
		t.Errorf("AcquireLease by the same owner after expiry = %+v, %v; want epoch 3", b2, ok)
	}
}

func testLeaseRelease(t *testing.T, s store.Store) {
	name, now := uniq("lease"), ms(time.Now()).UTC()
	a, _ := acquire(t, s, name, "a", now)
	if err := s.ReleaseLease(bg, a); err != nil {
		t.Fatal(err)
	}
	b, ok := acquire(t, s, name, "b", now.Add(time.Second))
	if !ok || b.Epoch != 2 {
		t.Fatalf("AcquireLease after a release = %+v, %v; want b's, epoch 2", b, ok)
	}
	// A release by a holder that lost the lease leaves the new holder's alone.
	if err := s.ReleaseLease(bg, a); err != nil {
		t.Fatal(err)
	}
	if c, ok := acquire(t, s, name, "c", now.Add(2*time.Second)); ok {
		t.Errorf("a stale release freed the lease: c got %+v", c)
	}
	if _, err := s.RenewLease(bg, b, now.Add(2*time.Second), leaseTTL); err != nil {
		t.Errorf("RenewLease after a stale release = %v", err)
	}
}

func testLeaseConcurrent(t *testing.T, s store.Store) {
	const rounds, acquirers = 3, 8
	name, now := uniq("lease"), ms(time.Now()).UTC()
	for round := range rounds {
		at := now.Add(time.Duration(round) * leaseTTL) // the previous round's lease expired
		var (
			wg  sync.WaitGroup
			mu  sync.Mutex
			won []store.Lease
		)
		for i := range acquirers {
			wg.Go(func() {
				l, ok, err := s.AcquireLease(bg, name, fmt.Sprintf("owner-%d-%d", round, i), at, leaseTTL)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					won = append(won, l)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(won) != 1 || won[0].Epoch != int64(round+1) {
			t.Fatalf("round %d: %d acquirers won (%+v); want exactly one, epoch %d", round, len(won), won, round+1)
		}
	}
}

func testScheduledClaimFencing(t *testing.T, s store.Store) {
	app := uniq("app")
	id, err := s.NextID(bg, "scheduled")
	if err != nil {
		t.Fatal(err)
	}
	sc := push.Scheduled{ID: id, AppID: app, DueAt: ms(time.Now()).UTC(), CreatedAt: ms(time.Now()).UTC(),
		Job: push.Job{ID: uniq("job"), AppID: app, Kind: push.JobQuery}}
	if err := s.PutScheduled(bg, sc); err != nil {
		t.Fatal(err)
	}
	name, now := uniq("lease"), ms(time.Now()).UTC()
	a1, ok := acquire(t, s, name, "a", now)
	if !ok {
		t.Fatal("a cannot acquire a fresh lease")
	}
	claim := func(what string, l store.Lease, want error) {
		t.Helper()
		wantErr(t, "ClaimScheduled "+what, s.ClaimScheduled(bg, l, app, id), want)
	}
	claim("by the holder", a1, nil)
	claim("by the holder again (a retry, a confirmation)", a1, nil)
	claim("under a lease never held", store.Lease{Name: uniq("lease"), Owner: "a", Epoch: a1.Epoch}, store.ErrLeaseLost)
	claim("under another owner's lease of the same epoch", store.Lease{Name: name, Owner: "b", Epoch: a1.Epoch}, store.ErrLeaseLost)

	// a's lease runs out and b takes it over. a, paused meanwhile, is refused on this schedule,
	// which b has not claimed yet: the fence is the lease's tenure, not the schedule's last claim.
	b2, ok := acquire(t, s, name, "b", now.Add(leaseTTL))
	if !ok || b2.Epoch != a1.Epoch+1 {
		t.Fatalf("b's acquisition after a's expiry = %+v, %v; want epoch %d", b2, ok, a1.Epoch+1)
	}
	if err := s.PutScheduled(bg, push.Scheduled{ID: id + 1_000_000, AppID: app, DueAt: sc.DueAt, CreatedAt: sc.CreatedAt, Job: sc.Job}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "ClaimScheduled of a schedule nobody claimed, by the lease's last tenure",
		s.ClaimScheduled(bg, a1, app, id+1_000_000), store.ErrLeaseLost)
	claim("by the holder of the last tenure", a1, store.ErrLeaseLost)
	claim("by the new holder", b2, nil)
	claim("by the new holder again", b2, nil)

	// b releases it; a takes it again, a new tenure with a new epoch: b's claims are refused,
	// a's old tenure is refused, a's new one claims.
	if err := s.ReleaseLease(bg, b2); err != nil {
		t.Fatal(err)
	}
	a3, ok := acquire(t, s, name, "a", now.Add(leaseTTL))
	if !ok || a3.Epoch != b2.Epoch+1 {
		t.Fatalf("a's acquisition after b's release = %+v, %v; want epoch %d", a3, ok, b2.Epoch+1)
	}
	claim("by the released tenure", b2, store.ErrLeaseLost)
	claim("by the holder's first tenure", a1, store.ErrLeaseLost)
	claim("by the holder's new tenure", a3, nil)

	if err := s.DeleteScheduled(bg, app, id); err != nil {
		t.Fatal(err)
	}
	claim("of a fired schedule", a3, store.ErrNotFound)
	wantErr(t, "ClaimScheduled of another app's id", s.ClaimScheduled(bg, a3, uniq("app"), id), store.ErrNotFound)
	// A schedule with the same id written again (not done today) starts unclaimed.
	if err := s.PutScheduled(bg, sc); err != nil {
		t.Fatal(err)
	}
	claim("of a new schedule", a3, nil)
}
