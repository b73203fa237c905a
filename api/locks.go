package api

import (
	"hash/maphash"
	"slices"
	"sync"
)

// nStripes is the number of write locks; 4096 keeps the chance that two unrelated writes
// share a stripe small at the request concurrency one node sees (hundreds in flight).
const nStripes = 4096

// stripes serialises read-modify-write sequences on installations within this process.
// Keys are "app\x00objectId" or "app\x00kind\x00deviceId". A caller locks every key it needs
// at once with lock; stripes are taken in ascending index order, so two callers never
// deadlock whatever their key sets.
type stripes struct {
	seed maphash.Seed
	mu   [nStripes]sync.Mutex
}

func newStripes() *stripes { return &stripes{seed: maphash.MakeSeed()} }

func (s *stripes) index(key string) int {
	return int(maphash.String(s.seed, key) & (nStripes - 1))
}

// held is a set of locked stripes, released by unlock.
type held []int

// lock takes the stripes of keys in ascending order (each once) and returns them.
func (s *stripes) lock(keys ...string) held {
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, s.index(k))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.mu[i].Lock()
	}
	return idx
}

func (s *stripes) unlock(h held) {
	for i := len(h) - 1; i >= 0; i-- {
		s.mu[h[i]].Unlock()
	}
}

func objectKey(appID, objectID string) string { return appID + "\x00o\x00" + objectID }

func deviceKey(appID string, kind string, id string) string {
	return appID + "\x00" + kind + "\x00" + id
}

// extend adds the stripes of keys to h without breaking the lock order: a stripe above
// every held one is locked (waiting), one already held is skipped, one below is only tried.
// When a try fails it returns h unchanged and false; the caller then releases h and locks
// the whole set with lock.
func (s *stripes) extend(h held, keys ...string) (held, bool) {
	out := h
	var added []int
	top := -1
	if len(h) > 0 {
		top = h[len(h)-1]
	}
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, s.index(k))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		if slices.Contains(h, i) {
			continue
		}
		if i > top {
			s.mu[i].Lock()
		} else if !s.mu[i].TryLock() {
			for _, a := range added {
				s.mu[a].Unlock()
			}
			return h, false
		}
		added = append(added, i)
	}
	out = append(slices.Clone(h), added...)
	slices.Sort(out)
	return out, true
}
