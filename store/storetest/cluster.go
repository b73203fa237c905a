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

// Cluster-wide limits and conditions: what several API or sender nodes over one store must
// agree on (call_counts, app_blocks, installations_by_device, members).

func testReserveCalls(t *testing.T, s store.Store) {
	app, minute := uniq("app"), time.Now().Unix()/60
	reserve := func(m int64, want, limit int) int {
		t.Helper()
		n, err := s.ReserveCalls(bg, app, m, want, limit)
		if err != nil {
			t.Fatalf("ReserveCalls: %v", err)
		}
		return n
	}
	if n := reserve(minute, 4, 10); n != 4 {
		t.Fatalf("first reservation of 4 under 10 = %d", n)
	}
	if n := reserve(minute, 4, 10); n != 4 {
		t.Fatalf("second reservation of 4 under 10 = %d", n)
	}
	if n := reserve(minute, 4, 10); n > 2 {
		t.Fatalf("third reservation of 4 with 2 left = %d, want at most 2", n)
	}
	if n := reserve(minute, 1, 10); n != 0 {
		t.Fatalf("reservation past the limit = %d, want 0", n)
	}
	if n := reserve(minute+1, 3, 10); n != 3 {
		t.Fatalf("reservation in the next minute = %d, want 3", n)
	}
	if n := reserve(minute+1, 0, 10); n != 0 {
		t.Fatalf("reservation of 0 = %d", n)
	}
}

// Many callers at once, one call each, never get more than the limit in total; a store with
// a conditional counter (every one but Cassandra's) grants exactly the limit.
func testReserveCallsConcurrent(t *testing.T, s store.Store) {
	app, minute := uniq("app"), time.Now().Unix()/60
	checkConcurrentGrants(t, s, "calls", func() (int64, error) {
		n, err := s.ReserveCalls(bg, app, minute, 1, concurrentLimit)
		if err != nil {
			return 0, fmt.Errorf("ReserveCalls: %w", err)
		}
		return int64(n), nil
	})
}

// concurrentLimit and concurrentCallers shape checkConcurrentGrants: more callers than the limit.
const concurrentLimit, concurrentCallers = 25, 60

// checkConcurrentGrants runs concurrentCallers reservations of one unit at once under
// concurrentLimit: together they never get more than the limit, and a store with a
// conditional counter (every one but Cassandra's) grants exactly the limit.
func checkConcurrentGrants(t *testing.T, s store.Store, what string, reserve func() (int64, error)) {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		granted int64
	)
	for range concurrentCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := reserve()
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			granted += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if granted > concurrentLimit {
		t.Fatalf("%d %s granted to %d concurrent callers under a limit of %d", granted, what, concurrentCallers, concurrentLimit)
	}
	if _, counter := s.(interface{ CounterCallCounts() }); !counter && granted != concurrentLimit {
		t.Fatalf("%d %s granted to %d concurrent callers, want exactly the limit %d", granted, what, concurrentCallers, concurrentLimit)
	}
}

func testAppBlocks(t *testing.T, s store.Store) {
	app, now := uniq("app"), ms(time.Now()).UTC()
	blocked := func(at time.Time) time.Time {
		t.Helper()
		u, err := s.AppBlocked(bg, app, at)
		if err != nil {
			t.Fatalf("AppBlocked: %v", err)
		}
		return u
	}
	if u := blocked(now); !u.IsZero() {
		t.Fatalf("never blocked app blocked until %v", u)
	}
	until := now.Add(time.Minute)
	if err := s.BlockApp(bg, app, until); err != nil {
		t.Fatal(err)
	}
	if u := blocked(now.Add(59 * time.Second)); !u.Equal(until) {
		t.Fatalf("AppBlocked within the block = %v, want %v", u, until)
	}
	// An earlier end does not shorten the block.
	if err := s.BlockApp(bg, app, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if u := blocked(now.Add(30 * time.Second)); !u.Equal(until) {
		t.Fatalf("AppBlocked after an earlier BlockApp = %v, want %v", u, until)
	}
	if u := blocked(until); !u.IsZero() {
		t.Fatalf("AppBlocked at the block's end = %v, want not blocked", u)
	}
	if u, err := s.AppBlocked(bg, uniq("app"), now); err != nil || !u.IsZero() {
		t.Fatalf("another app blocked: %v, %v", u, err)
	}
}

// Two writers put two installations with one new token at once: exactly one is written, the
// other gets ErrDuplicate, and the token's row points at the one written. This is the
// condition that makes two API nodes over one store create one installation per token.
func testInstallationConcurrentSameDevice(t *testing.T, s store.Store) {
	app := uniq("app")
	for round := range 20 {
		token := fmt.Sprintf("tok-%d", round)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.PutInstallation(bg, app, buckets, inst(fmt.Sprintf("r%d-o%d", round, i), push.DeviceIOS, token, "c"))
			}()
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won < 0:
				won = i
			case err == nil:
				t.Fatalf("round %d: both concurrent puts of token %s succeeded", round, token)
			case !errors.Is(err, store.ErrDuplicate):
				t.Fatalf("round %d: put %d: %v, want nil or ErrDuplicate", round, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: neither concurrent put succeeded", round)
		}
		wantDevice(t, s, app, push.KindToken, token, fmt.Sprintf("r%d-o%d", round, won))
		if _, err := s.GetInstallation(bg, app, fmt.Sprintf("r%d-o%d", round, 1-won)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: the losing put was written: %v", round, err)
		}
	}
}

func testMembers(t *testing.T, s store.Store) {
	group, now := uniq("group"), ms(time.Now()).UTC()
	reg := func(member string, at time.Time) int {
		t.Helper()
		n, err := s.RegisterMember(bg, group, member, at, 10*time.Second)
		if err != nil {
			t.Fatalf("RegisterMember: %v", err)
		}
		return n
	}
	if n := reg("a", now); n != 1 {
		t.Fatalf("first member sees %d live, want 1", n)
	}
	if n := reg("b", now.Add(time.Second)); n != 2 {
		t.Fatalf("second member sees %d live, want 2", n)
	}
	if n := reg("a", now.Add(5*time.Second)); n != 2 {
		t.Fatalf("a heartbeat sees %d live, want 2", n)
	}
	// b's registration ran out at now+11s; a's at now+15s.
	if n := reg("a", now.Add(12*time.Second)); n != 1 {
		t.Fatalf("after b's expiry a sees %d live, want 1", n)
	}
	if n, err := s.RegisterMember(bg, uniq("group"), "a", now, time.Second); err != nil || n != 1 {
		t.Fatalf("another group: %d, %v; want 1", n, err)
	}
}
