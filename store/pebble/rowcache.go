package pebble

import (
	"hash/maphash"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// rowCache remembers recently read or written rows of one kind, by key, so that the reads
// every upsert makes skip Pebble. Two kinds have one (Store.devices, Store.insts):
//
//   - device rows (the object id of the installation that holds a device id, or "" for an id
//     no installation holds): every upsert starts by looking its device ids up ("the app was
//     opened"), and the store reads a new id's row again under its stripe to refuse a
//     duplicate. A device row changes only when an installation gains or loses the id.
//   - installations' primary rows: an update reads the stored installation (the API, to merge
//     the body into it), and the store reads its route again under the stripe to know which
//     index rows the new version replaces. The put leaves the row it wrote, so the next
//     upsert of the same installation reads none.
//
// Both Gets are costly here: a row rarely rewritten misses every memtable (a skiplist seek
// each, cache misses all the way down) before the table that holds it, and a primary row of
// 256 bytes or more is read from a blob file besides (valueSeparationMin).
//
// Coherence: every batch that writes or deletes such rows passes through learnRows (once
// committed, under the stripes of its rows) or forgetRows, which set or drop those keys and
// bump their shards' generation. A read that missed fills the entry only if its shard's
// generation is still the one it saw before reading Pebble, so a value read before a change
// can never be cached after it. Reads that race a change may see either value, as they may
// without the cache; a writer holding a row's stripe finds what the last writer left, because
// every writer of these rows tells the cache before it releases the stripes.
//
// The cache holds at most its bounds (entries, bytes): a shard that is full drops arbitrary
// entries (Go's map iteration starts at a random place) for each new one. Values are never
// changed once cached: a []byte value is a copy the cache owns, and readers only read it.
type rowCache[V string | []byte] struct {
	seed    maphash.Seed
	entries int // per shard; 0: no bound
	bytes   int // per shard, of keys, values and rowEntryOverhead; 0: no bound
	shards  [rowCacheShards]rowShard[V]
}

const rowCacheShards = 64

// rowEntryOverhead is what an entry costs besides its key's and value's bytes: the map slot
// (key and value headers, tophash) and the two allocations' rounding, about.
const rowEntryOverhead = 64

type rowShard[V string | []byte] struct {
	mu    sync.Mutex
	gen   uint64
	m     map[string]V
	bytes int
	_     [32]byte // one shard per 64-byte cache line
}

// newRowCache returns a cache of about entries entries and bytes bytes (either <= 0: no such
// bound), or nil (no cache) when neither bound is positive.
func newRowCache[V string | []byte](entries, bytes int) *rowCache[V] {
	if entries <= 0 && bytes <= 0 {
		return nil
	}
	c := &rowCache[V]{seed: maphash.MakeSeed()}
	if entries > 0 {
		c.entries = max(1, entries/rowCacheShards)
	}
	if bytes > 0 {
		c.bytes = max(1, bytes/rowCacheShards)
	}
	for i := range c.shards {
		c.shards[i].m = make(map[string]V)
	}
	return c
}

func (c *rowCache[V]) shard(key []byte) *rowShard[V] {
	return &c.shards[maphash.Bytes(c.seed, key)%rowCacheShards]
}

// get returns the cached value of key, and the shard's generation for a later fill.
func (c *rowCache[V]) get(key []byte) (v V, gen uint64, ok bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	v, ok = sh.m[string(key)]
	gen = sh.gen
	sh.mu.Unlock()
	return v, gen, ok
}

// fill caches v for key, read from Pebble after a get that returned gen, unless the shard has
// forgotten or learnt anything since.
func (c *rowCache[V]) fill(key []byte, v V, gen uint64) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen != gen {
		return
	}
	c.put(sh, key, v)
}

// set caches v for key, written by a batch just committed under the row's stripe: fills of
// values read before it are refused (the generation moves on), and the next writer of the row,
// which takes the stripe after this call, finds the value it left.
func (c *rowCache[V]) set(key []byte, v V) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.gen++
	c.put(sh, key, v)
}

// put stores v for key in sh, whose lock the caller holds, dropping arbitrary entries while the
// shard would exceed a bound. A value larger than a shard's byte bound is not kept.
func (c *rowCache[V]) put(sh *rowShard[V], key []byte, v V) {
	size := len(key) + len(v) + rowEntryOverhead
	if old, ok := sh.m[string(key)]; ok {
		delete(sh.m, string(key))
		sh.bytes -= len(key) + len(old) + rowEntryOverhead
	}
	if c.bytes > 0 && size > c.bytes {
		return
	}
	for len(sh.m) > 0 && ((c.entries > 0 && len(sh.m) >= c.entries) || (c.bytes > 0 && sh.bytes+size > c.bytes)) {
		for k, old := range sh.m {
			delete(sh.m, k)
			sh.bytes -= len(k) + len(old) + rowEntryOverhead
			break
		}
	}
	sh.m[string(key)] = v
	sh.bytes += size
}

func (c *rowCache[V]) forget(key []byte) {
	sh := c.shard(key)
	sh.mu.Lock()
	if old, ok := sh.m[string(key)]; ok {
		delete(sh.m, string(key))
		sh.bytes -= len(key) + len(old) + rowEntryOverhead
	}
	sh.gen++
	sh.mu.Unlock()
}

// clear forgets every entry.
func (c *rowCache[V]) clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.bytes = 0
		sh.gen++
		sh.mu.Unlock()
	}
}

// len is the number of cached entries and what they cost, in bytes as the bound counts them.
func (c *rowCache[V]) len() (entries, bytes int) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		entries += len(sh.m)
		bytes += sh.bytes
		sh.mu.Unlock()
	}
	return entries, bytes
}

// learnRows updates the row caches with every cached kind of row that b, just committed, sets
// (their values) or deletes (forgotten). Call it before releasing the stripes of b's rows; a
// batch that failed to commit goes through forgetRows instead.
func (s *Store) learnRows(b *pebble.Batch) {
	s.eachCachedRow(b, func(kind pebble.InternalKeyKind, key, value []byte) {
		switch key[0] {
		case tByDevice:
			if s.devices == nil {
				return
			}
			if kind == pebble.InternalKeyKindSet {
				s.devices.set(key, string(value))
			} else {
				s.devices.forget(key)
			}
		case tInst:
			if s.insts == nil {
				return
			}
			if kind == pebble.InternalKeyKindSet {
				s.insts.set(key, append([]byte(nil), value...))
			} else {
				s.insts.forget(key)
			}
		}
	})
}

// forgetRows drops from the row caches every cached kind of row that b sets or deletes. Call
// it after committing b, whether or not the commit succeeded, and before releasing the
// stripes of b's rows, for every batch that may touch device or primary rows.
func (s *Store) forgetRows(b *pebble.Batch) {
	s.eachCachedRow(b, func(_ pebble.InternalKeyKind, key, _ []byte) {
		switch key[0] {
		case tByDevice:
			if s.devices != nil {
				s.devices.forget(key)
			}
		case tInst:
			if s.insts != nil {
				s.insts.forget(key)
			}
		}
	})
}

// eachCachedRow calls fn for every device or primary row b sets or deletes, when the store
// has a cache of either. A batch it cannot read (not one this store built) clears the caches
// instead.
func (s *Store) eachCachedRow(b *pebble.Batch, fn func(kind pebble.InternalKeyKind, key, value []byte)) {
	if s.devices == nil && s.insts == nil {
		return
	}
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			if s.devices != nil {
				s.devices.clear()
			}
			if s.insts != nil {
				s.insts.clear()
			}
			return
		}
		if !ok {
			return
		}
		if len(key) > 0 && (key[0] == tByDevice || key[0] == tInst) {
			fn(kind, key, value)
		}
	}
}
