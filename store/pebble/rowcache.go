package pebble

import (
	"encoding/binary"
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
// The cache holds at most its bounds (entries, bytes). Each shard keeps its entries in one
// ring of bytes, oldest first, and an index from a key's 64-bit hash to its entry's offset:
// neither holds a pointer, so the collector neither scans nor marks the cache, however many
// rows it holds (with a map of strings, the rows a node's upserts had cached were most of its
// live heap, and every collection marked them one by one). A shard that is full drops its
// oldest entries for each new one. A value is copied in by a write and out by a get: readers
// own what they get.
type rowCache[V string | []byte] struct {
	seed    maphash.Seed
	entries int // per shard; 0: no bound
	ring    int // per shard: the ring's bytes
	shards  [rowCacheShards]rowShard
}

const rowCacheShards = 64

// rowEntryOverhead is what an entry costs besides its key's and value's bytes: its header in
// the ring (the key's hash, the key's and the value's lengths).
const rowEntryOverhead = 16

// rowEntryBytes is the ring's room per entry of a cache bounded by entries alone: a device
// row's key (the app id, the kind and the device id) and an object id, with the header.
const rowEntryBytes = 200

type rowShard struct {
	mu  sync.Mutex
	gen uint64
	// idx maps a key's hash to its live entry's offset in ring. Entries are laid out in ring
	// from tail to head, wrapping at wrapEnd when wrapped; a rewritten or forgotten key's old
	// entry stays in the ring, dead, until the ring's turn comes to drop it.
	idx                 map[uint64]uint32
	ring                []byte // allocated at the first write
	tail, head, wrapEnd int
	wrapped             bool
	live, bytes         int      // live entries and what they cost (key, value, rowEntryOverhead)
	_                   [32]byte // 128 bytes a shard: two cache lines of its own
}

// newRowCache returns a cache of about entries entries and bytes bytes (either <= 0: no such
// bound), or nil (no cache) when neither bound is positive. A cache bounded by entries alone
// holds rowEntryBytes of ring per entry.
func newRowCache[V string | []byte](entries, bytes int) *rowCache[V] {
	if entries <= 0 && bytes <= 0 {
		return nil
	}
	c := &rowCache[V]{seed: maphash.MakeSeed()}
	if entries > 0 {
		c.entries = max(1, entries/rowCacheShards)
	}
	if bytes > 0 {
		c.ring = max(1, bytes/rowCacheShards)
	} else {
		c.ring = c.entries * rowEntryBytes
	}
	c.ring = min(c.ring, 1<<31) // offsets are uint32
	for i := range c.shards {
		c.shards[i].idx = make(map[uint64]uint32)
	}
	return c
}

func (c *rowCache[V]) shard(h uint64) *rowShard { return &c.shards[h%rowCacheShards] }

// get returns a copy of the cached value of key, and the shard's generation for a later fill.
func (c *rowCache[V]) get(key []byte) (v V, gen uint64, ok bool) {
	h := maphash.Bytes(c.seed, key)
	sh := c.shard(h)
	sh.mu.Lock()
	if val, found := sh.lookup(h, key); found {
		v, ok = V(val), true // a copy: the ring's bytes are rewritten later
	}
	gen = sh.gen
	sh.mu.Unlock()
	return v, gen, ok
}

// fill caches v for key, read from Pebble after a get that returned gen, unless the shard has
// forgotten or learnt anything since.
func (c *rowCache[V]) fill(key []byte, v V, gen uint64) { fillRow(c, key, v, gen) }

// set caches v for key, written by a batch just committed under the row's stripe: fills of
// values read before it are refused (the generation moves on), and the next writer of the row,
// which takes the stripe after this call, finds the value it left.
func (c *rowCache[V]) set(key []byte, v V) { setRow(c, key, v) }

// fillRow and setRow are fill and set for a value of either kind of bytes (a device row's
// value comes from a batch as []byte, for a cache of strings).
func fillRow[V, B string | []byte](c *rowCache[V], key []byte, v B, gen uint64) {
	h := maphash.Bytes(c.seed, key)
	sh := c.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen != gen {
		return
	}
	putRow(c, sh, h, key, v)
}

func setRow[V, B string | []byte](c *rowCache[V], key []byte, v B) {
	h := maphash.Bytes(c.seed, key)
	sh := c.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.gen++
	putRow(c, sh, h, key, v)
}

// lookup returns the ring's bytes of key's value (valid while the caller holds sh.mu).
func (sh *rowShard) lookup(h uint64, key []byte) ([]byte, bool) {
	off, ok := sh.idx[h]
	if !ok {
		return nil, false
	}
	k, v := sh.entry(int(off))
	if string(k) != string(key) { // another key of the same hash
		return nil, false
	}
	return v, true
}

// entry returns the key and value of the entry at off.
func (sh *rowShard) entry(off int) (key, value []byte) {
	kl := int(binary.LittleEndian.Uint32(sh.ring[off+8:]))
	vl := int(binary.LittleEndian.Uint32(sh.ring[off+12:]))
	k := off + rowEntryOverhead
	return sh.ring[k : k+kl], sh.ring[k+kl : k+kl+vl]
}

// putRow stores v for key (hash h) in sh, whose lock the caller holds, dropping the oldest
// entries while the shard would exceed a bound. A value larger than the ring is not kept.
func putRow[V, B string | []byte](c *rowCache[V], sh *rowShard, h uint64, key []byte, v B) {
	sh.drop(h)
	size := rowEntryOverhead + len(key) + len(v)
	if size > c.ring {
		return
	}
	if sh.ring == nil {
		sh.ring = make([]byte, c.ring)
	}
	for c.entries > 0 && sh.live >= c.entries {
		sh.evictOldest()
	}
	for {
		if !sh.wrapped {
			if len(sh.ring)-sh.head >= size {
				break
			}
			// No room before the ring's end: the entries wrap; what follows head stays unused.
			sh.wrapEnd, sh.head, sh.wrapped = sh.head, 0, true
		}
		if sh.tail-sh.head >= size {
			break
		}
		sh.evictOldest()
	}
	off := sh.head
	binary.LittleEndian.PutUint64(sh.ring[off:], h)
	binary.LittleEndian.PutUint32(sh.ring[off+8:], uint32(len(key)))
	binary.LittleEndian.PutUint32(sh.ring[off+12:], uint32(len(v)))
	copy(sh.ring[off+rowEntryOverhead:], key)
	copy(sh.ring[off+rowEntryOverhead+len(key):], v)
	sh.head += size
	sh.idx[h] = uint32(off)
	sh.live++
	sh.bytes += size
}

// drop forgets the live entry of hash h, if any (its bytes stay in the ring, dead).
func (sh *rowShard) drop(h uint64) {
	off, ok := sh.idx[h]
	if !ok {
		return
	}
	k, v := sh.entry(int(off))
	delete(sh.idx, h)
	sh.live--
	sh.bytes -= rowEntryOverhead + len(k) + len(v)
}

// evictOldest drops the entry at the ring's tail, live or dead; the ring holds one.
func (sh *rowShard) evictOldest() {
	off := sh.tail
	h := binary.LittleEndian.Uint64(sh.ring[off:])
	k, v := sh.entry(off)
	if cur, ok := sh.idx[h]; ok && int(cur) == off {
		sh.drop(h)
	}
	sh.tail += rowEntryOverhead + len(k) + len(v)
	if sh.wrapped && sh.tail == sh.wrapEnd {
		sh.tail, sh.wrapped = 0, false
	}
	if !sh.wrapped && sh.tail == sh.head {
		sh.tail, sh.head = 0, 0 // empty: the whole ring is room again
	}
}

func (c *rowCache[V]) forget(key []byte) {
	h := maphash.Bytes(c.seed, key)
	sh := c.shard(h)
	sh.mu.Lock()
	if _, ok := sh.lookup(h, key); ok {
		sh.drop(h)
	}
	sh.gen++
	sh.mu.Unlock()
}

// clear forgets every entry.
func (c *rowCache[V]) clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		clear(sh.idx)
		sh.tail, sh.head, sh.wrapped, sh.live, sh.bytes = 0, 0, false, 0, 0
		sh.gen++
		sh.mu.Unlock()
	}
}

// len is the number of cached entries and what they cost, in bytes as the bound counts them.
func (c *rowCache[V]) len() (entries, bytes int) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		entries += sh.live
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
				setRow(s.devices, key, value)
			} else {
				s.devices.forget(key)
			}
		case tInst:
			if s.insts == nil {
				return
			}
			if kind == pebble.InternalKeyKindSet {
				s.insts.set(key, value) // copied into the ring
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
