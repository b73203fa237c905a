package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
)

func TestGCTunePercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		base, want     int
	}{
		{0, 64 * mib, 100, 100},         // no collection yet
		{1 * mib, 64 * mib, 100, 1600},  // the runtime's 4 MiB minimum × 16 = 64 MiB
		{16 * mib, 64 * mib, 100, 400},  // goal 80 MiB
		{30 * mib, 64 * mib, 100, 214},  // goal about 94 MiB
		{64 * mib, 64 * mib, 100, 100},  // headroom and GOGC agree
		{500 * mib, 64 * mib, 100, 100}, // a large heap keeps GOGC
		{500 * mib, 64 * mib, 200, 200}, // and an operator's higher base
		{3 * mib, 8 * mib, 100, 200},    // limit 8 MiB / 4 MiB × 100
	} {
		if got := Percent(c.live, c.headroom, c.base); got != c.want {
			t.Errorf("Percent(live %d MiB, headroom %d MiB, base %d) = %d, want %d",
				c.live/mib, c.headroom/mib, c.base, got, c.want)
		}
	}
}

// The tuner follows the real collector: after a cycle on a small live heap GOGC is raised so
// the goal sits the headroom above it; once the live heap outgrows the headroom GOGC is the
// base again; Stop gives the base back; a GOGC set in the environment, or no headroom, leaves
// everything alone, and so does a second Start while one runs.
func TestGCTuneFollowsTheLiveHeap(t *testing.T) {
	base := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(base) })
	gogc := func() int {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int(s[0].Value.Uint64())
	}

	if tu := Start(0, ""); tu != nil || gogc() != 100 {
		t.Fatalf("Start with no headroom: %v, GOGC %d", tu, gogc())
	}
	if tu := Start(64<<20, "50"); tu != nil || gogc() != 100 {
		t.Fatalf("Start with GOGC in the environment: %v, GOGC %d", tu, gogc())
	}

	const headroom = 16 << 20
	tu := Start(headroom, "")
	defer tu.Stop()
	if second := Start(headroom, ""); second != nil {
		second.Stop()
		t.Fatal("a second Tuner started beside the first")
	}
	collect := func(what string, want func(int) bool) {
		t.Helper()
		waitfor.True(t, 10*time.Second, what, func() bool {
			runtime.GC()
			return want(tu.GOGC()) && gogc() == tu.GOGC()
		})
	}
	// The test binary's live heap is a few MiB: GOGC above 100.
	collect("GOGC raised on a small live heap", func(p int) bool { return p > 100 })
	if p := tu.GOGC(); p > headroom*100/(4<<20) {
		t.Errorf("GOGC %d above the runtime minimum's limit %d", p, headroom*100/(4<<20))
	}

	live := make([][]byte, 48)
	for i := range live {
		live[i] = make([]byte, 1<<20) // 48 MiB live, three times the headroom
	}
	collect("GOGC back to 100 on a live heap larger than the headroom", func(p int) bool { return p == 100 })
	runtime.KeepAlive(live)

	collect("GOGC raised again once the heap shrank", func(p int) bool { return p > 100 })
	tu.Stop()
	if got := gogc(); got != 100 {
		t.Errorf("GOGC after Stop = %d, want 100", got)
	}
	runtime.GC()
	runtime.GC()
	if got := gogc(); got != 100 {
		t.Errorf("GOGC after Stop and two collections = %d, want 100 (the tuner still runs)", got)
	}
	again := Start(headroom, "")
	if again == nil {
		t.Fatal("no Tuner started after the first stopped")
	}
	again.Stop()
}
