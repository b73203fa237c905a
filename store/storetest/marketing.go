package storetest

import (
	"slices"
	"sync"
	"testing"

	"github.com/pushd/pushd/store"
)

func countMarketing(t *testing.T, s store.Store, app, day, pushID string, limit int, devices ...string) []bool {
	t.Helper()
	got := make([]bool, len(devices))
	if err := s.CountMarketing(bg, app, day, pushID, limit, devices, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// testMarketingCounts: each device takes up to the cap of marketing pushes a day; a push
// counted before is allowed again without counting twice (a task run again); a device listed
// twice counts once; another day starts afresh; apps are apart; concurrent pushes on one store
// never take a device past its cap.
func testMarketingCounts(t *testing.T, s store.Store) {
	app, other := uniq("mkt"), uniq("mkt")
	const day, next = "2026-11-25", "2026-11-26"
	for i, p := range []string{"p1", "p2"} {
		if got := countMarketing(t, s, app, day, p, 2, "d1", "d2"); !slices.Equal(got, []bool{true, true}) {
			t.Fatalf("push %d: %v, want both allowed", i+1, got)
		}
	}
	if got := countMarketing(t, s, app, day, "p3", 2, "d1", "d3", "d3"); !slices.Equal(got, []bool{false, true, true}) {
		t.Fatalf("p3: %v, want d1 over its cap of 2, d3 allowed (listed twice)", got)
	}
	// p2 again (its task run again): allowed, and it did not count twice.
	if got := countMarketing(t, s, app, day, "p2", 2, "d1", "d2"); !slices.Equal(got, []bool{true, true}) {
		t.Fatalf("p2 again: %v, want allowed", got)
	}
	if got := countMarketing(t, s, app, day, "p4", 2, "d3"); !slices.Equal(got, []bool{true}) {
		t.Fatalf("p4 to d3: %v, want allowed (d3 had only p3; a duplicate must not count twice)", got)
	}
	if got := countMarketing(t, s, app, next, "p5", 2, "d1"); !slices.Equal(got, []bool{true}) {
		t.Fatalf("next day: %v, want allowed", got)
	}
	if got := countMarketing(t, s, other, day, "p9", 1, "d1"); !slices.Equal(got, []bool{true}) {
		t.Fatalf("other app: %v, want allowed", got)
	}
	if err := s.CountMarketing(bg, app, day, "p0", 2, nil, nil); err != nil {
		t.Fatalf("no devices: %v", err)
	}

	// Eight pushes at once to one fresh device with a cap of 3: exactly 3 get it (a store
	// whose counts are not conditional may document otherwise; Pebble's are).
	if _, racy := s.(interface{ MarketingCountsRace() }); racy {
		return
	}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		n  int
	)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := make([]bool, 1)
			if err := s.CountMarketing(bg, app, day, "c"+string(rune('a'+i)), 3, []string{"dc"}, got); err != nil {
				t.Error(err)
				return
			}
			if got[0] {
				mu.Lock()
				n++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if n != 3 {
		t.Fatalf("%d of 8 concurrent pushes reached a device capped at 3", n)
	}
}
