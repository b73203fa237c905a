package pebble

import (
	"hash/maphash"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// devCache remembers, for recently looked-up device ids, the installation each belongs to (a
// device row's value), so that the lookup every upsert starts with ("the app was opened")
// skips Pebble. That Get is costly for a row that is rarely rewritten: it misses both
// memtables (a skiplist seek each, cache misses all the way down) before the table that holds
// it. A device row changes only when an installation gains or loses the id, so entries stay
// valid for long.
//
// Coherence: every batch that writes or deletes device rows passes through forgetDevices
// after it is committed (and so visible), which drops those keys and bumps their shards'
// generation. A lookup that missed fills the entry only if its shard's generation is still the
// one it saw before reading Pebble, so a value read before a change can never be cached after
// it. Reads that race a change may see either value, as they may without the cache.
//
// The cache holds at most its capacity: a shard that is full drops an arbitrary entry (Go's
// map iteration starts at a random place) for each new one. Absent ids are not remembered.
type devCache struct {
	seed   maphash.Seed
	per    int // entries per shard
	shards [devCacheShards]devShard
}

const devCacheShards = 64

type devShard struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]string
	_   [40]byte // one shard per 64-byte cache line
}

// newDevCache returns a cache of about entries entries, or nil (no cache) when entries <= 0.
func newDevCache(entries int) *devCache {
	if entries <= 0 {
		return nil
	}
	c := &devCache{seed: maphash.MakeSeed(), per: max(1, entries/devCacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]string)
	}
	return c
}

func (c *devCache) shard(key []byte) *devShard {
	return &c.shards[maphash.Bytes(c.seed, key)%devCacheShards]
}

// get returns the cached object id of the device row key, and the shard's generation for a
// later fill.
func (c *devCache) get(key []byte) (oid string, gen uint64, ok bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	oid, ok = sh.m[string(key)]
	gen = sh.gen
	sh.mu.Unlock()
	return oid, gen, ok
}

// fill caches oid for key, read from Pebble after a get that returned gen, unless the shard
// has forgotten anything since.
func (c *devCache) fill(key []byte, oid string, gen uint64) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen != gen {
		return
	}
	c.put(sh, key, oid)
}

// set caches oid for key, written by a batch just committed under the row's stripe: fills of
// values read before it are refused (the generation moves on), and the next writer of the row,
// which takes the stripe after this call, finds the value it left.
func (c *devCache) set(key []byte, oid string) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.gen++
	c.put(sh, key, oid)
}

// put stores oid for key in sh, whose lock the caller holds; a full shard drops an arbitrary
// entry for a new key.
func (c *devCache) put(sh *devShard, key []byte, oid string) {
	if _, ok := sh.m[string(key)]; !ok && len(sh.m) >= c.per {
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	sh.m[string(key)] = oid
}

func (c *devCache) forget(key []byte) {
	sh := c.shard(key)
	sh.mu.Lock()
	delete(sh.m, string(key))
	sh.gen++
	sh.mu.Unlock()
}

// clear forgets every entry.
func (c *devCache) clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.gen++
		sh.mu.Unlock()
	}
}

// len is the number of cached entries.
func (c *devCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// learnDevices updates the device cache with every device row that b, just committed, sets
// (their values) or deletes (forgotten). Call it before releasing the stripes of b's device
// rows; a batch that failed to commit goes through forgetDevices instead.
func (s *Store) learnDevices(b *pebble.Batch) {
	s.eachDeviceRow(b, func(kind pebble.InternalKeyKind, key, value []byte) {
		if kind == pebble.InternalKeyKindSet {
			s.devices.set(key, string(value))
		} else {
			s.devices.forget(key)
		}
	})
}

// forgetDevices drops from the device cache every device row that b sets or deletes. Call it
// after committing b, whether or not the commit succeeded, for every batch that may touch
// device rows.
func (s *Store) forgetDevices(b *pebble.Batch) {
	s.eachDeviceRow(b, func(_ pebble.InternalKeyKind, key, _ []byte) { s.devices.forget(key) })
}

// eachDeviceRow calls fn for every device row b sets or deletes, when the store has a device
// cache. A batch it cannot read (not one this store built) clears the cache instead.
func (s *Store) eachDeviceRow(b *pebble.Batch, fn func(kind pebble.InternalKeyKind, key, value []byte)) {
	if s.devices == nil {
		return
	}
	r := b.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil {
			s.devices.clear()
			return
		}
		if !ok {
			return
		}
		if len(key) > 0 && key[0] == tByDevice {
			fn(kind, key, value)
		}
	}
}
