// Package gctune keeps Go's collector from running more often than a node's heap needs: the
// heap goal stays at least a fixed headroom above the live heap.
//
// With GOGC's default of 100 the collector runs each time the process has allocated as much
// as the heap held live after the last cycle. pushd's live heap is small (its store's caches
// and memtables are outside it, 20–30 MB in use on a node taking thousands of pushes a second)
// while each accepted push allocates 10–18 KB, so at 5,000 pushes/s a cycle started every half
// second, and each mark (5–26 ms with the spare Ps on two cores) slowed every request it
// overlapped: a p99 over 10 ms at that rate came from those windows. A larger GOGC everywhere
// would also multiply the heap a node with a large live heap keeps; a headroom in bytes costs
// at most that many bytes.
package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Tuner sets GOGC after every collection so that the next one starts no sooner than headroom
// bytes of allocation later, and never sooner than base (the GOGC it found) would start it.
type Tuner struct {
	headroom uint64
	base     int

	mu      sync.Mutex
	stopped bool
	percent int // last set
	sample  []metrics.Sample
}

// active is set while a Tuner runs: GOGC is the process's, so one at a time (a second
// would take the first's setting for its base).
var active atomic.Bool

// Start starts a Tuner for headroom bytes. It returns nil, and changes nothing, when headroom
// is 0, GOGC is set in the environment (goGC, os.Getenv("GOGC")): an operator's GOGC stands,
// or another Tuner runs.
func Start(headroom uint64, goGC string) *Tuner {
	if headroom == 0 || goGC != "" {
		return nil
	}
	gogc := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(gogc)
	base := int(gogc[0].Value.Uint64())
	if base <= 0 {
		return nil // collection off: nothing to tune
	}
	if !active.CompareAndSwap(false, true) {
		return nil
	}
	t := &Tuner{headroom: headroom, base: base, percent: base,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	t.arm()
	return t
}

// arm sets a finalizer on a fresh object: it runs after the next collection that finds the
// object unreachable, which is the next collection.
func (t *Tuner) arm() {
	// 16 bytes: a smaller pointer-free object would share a tiny-allocator block, freed (and
	// finalized) only with all of its neighbours.
	s := new([16]byte)
	runtime.SetFinalizer(s, func(*[16]byte) {
		if t.tune() {
			t.arm()
		}
	})
}

// tune sets GOGC from the live heap of the last collection; false once stopped.
func (t *Tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample)
	p := Percent(t.sample[0].Value.Uint64(), t.headroom, t.base)
	if p != t.percent {
		debug.SetGCPercent(p)
		t.percent = p
	}
	return true
}

// Percent is the GOGC that puts the heap goal headroom bytes above live, or base percent
// above it when that is more. It is at most headroom / 4 MiB × 100: the runtime's smallest
// heap goal is 4 MiB × GOGC / 100, so a larger GOGC would make the goal of a small heap
// larger than live + headroom. Before any collection (live 0) it is base.
func Percent(live, headroom uint64, base int) int {
	if live == 0 {
		return base
	}
	limit := float64(headroom) * 100 / (4 << 20)
	p := min(math.Ceil(float64(headroom)*100/float64(live)), limit)
	return max(base, int(p))
}

// Stop ends the tuning and gives GOGC back its value from before Start. It may be called on
// a nil Tuner.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(t.base)
		active.Store(false)
	}
}

// GOGC is the value the Tuner set last.
func (t *Tuner) GOGC() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}
