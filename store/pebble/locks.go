package pebble

import (
	"hash/maphash"
	"slices"
	"sync"
)

// stripes serialise read-modify-write sequences on one record (an installation and the device
// ids it claims, a push record, a counter) without a lock per record. A caller that needs
// several stripes takes them through lockAll, in ascending index order, so two callers never
// wait on each other in a cycle; no other lock is held while waiting for a stripe.
type stripes struct {
	mu [nStripes]sync.Mutex
}

// nStripes bounds false sharing between unrelated records. Writers hold their stripes across
// the synced commit, so with 128 upserts in flight (2–4 stripes each) 1024 stripes made
// nearly half of new writers wait on an unrelated record; 65536 mutexes cost 512 KiB and make
// that rare.
const nStripes = 1 << 16

var stripeSeed = maphash.MakeSeed()

// stripeOf returns the stripe index of a record identified by the parts.
func stripeOf(parts ...string) int {
	var h maphash.Hash
	h.SetSeed(stripeSeed)
	for _, p := range parts {
		_, _ = h.WriteString(p)
		_ = h.WriteByte(0)
	}
	return int(h.Sum64() % nStripes)
}

func (s *stripes) lock(i int) func() {
	s.mu[i].Lock()
	return s.mu[i].Unlock
}

// lockAll locks each distinct stripe of idx (which it sorts) and returns the unlock function.
func (s *stripes) lockAll(idx []int) func() {
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.mu[i].Lock()
	}
	return func() {
		for j := len(idx) - 1; j >= 0; j-- {
			s.mu[idx[j]].Unlock()
		}
	}
}
