package pebble

import (
	"hash/maphash"
	"sync"
)

// recCache keeps the documents of the push records this process wrote last, so that fan-out's
// reads of a push accepted a moment ago (the planner's update, the task's read, the update that
// completes the task: three reads per push) skip Pebble's point lookup, which under intake's
// write load seeks every memtable and level-0 table. It also knows, for a record created under
// a fresh objectId (CreateNewNotificationNoSync), that no own-channel or receipt counts exist
// beside it until one is written, which spares each read the two lookups of withDirectCounts.
//
// Coherence: only writes fill it, never a read's miss (a read racing a write could otherwise
// cache the older document). Every write of a record key goes through notificationRows (its
// batches committed by createNotificationChecked, writeNotification, CreateScheduledNotification)
// or deleteNotification, under the record's stripe; each calls put or drop after its commit and
// before it releases the stripe, so whoever holds the stripe reads the last committed document.
// A reader without the stripe may see the previous document until put runs, as it could have
// read Pebble a moment earlier. An entry is changed in place, never replaced, so that counted
// (which runs under another stripe) cannot be lost to a concurrent put.
//
// The counts: countDirect and countReceipts call counted before they commit, so a reader that
// still sees noCounts read before the counts existed.
//
// It holds the records fan-out has still to read: a record written done or cancelled is
// dropped (commitRecord), and at most about entries records and bytes bytes of documents; a
// full shard drops arbitrary entries.
type recCache struct {
	seed     maphash.Seed
	per      int // entries per shard
	perBytes int // document bytes per shard
	shards   [recCacheShards]recShard
}

const (
	recCacheShards = 32
	// recCacheEntries and recCacheBytes bound the records kept: 16,384 records of about 1 KiB
	// (one with its pending job), so that fan-out at 5,000 pushes/s may run seconds behind the
	// API and still find the records it plans; and 16 MiB whatever their size (a record's data
	// may reach 4 KiB, twice with its pending job). Four times as much let the planner find
	// two thirds of its records instead of a sixth behind a closed loop of 100,000 pushes, but
	// raised the peak RSS by 120 MB and moved neither the loop's rate nor its CPU beyond the
	// runs' noise (docs/decisions.md, "The collector's headroom, and records behind a burst").
	recCacheEntries = 16384
	recCacheBytes   = 16 << 20
)

type recShard struct {
	mu    sync.Mutex
	m     map[string]*recEntry
	bytes int // of the documents in m
	_     [40]byte
}

type recEntry struct {
	doc      []byte // the stored JSON; never modified once cached
	noCounts bool   // no direct or receipt counts exist beside the record
}

func newRecCache(entries, bytes int) *recCache {
	c := &recCache{seed: maphash.MakeSeed(), per: max(1, entries/recCacheShards), perBytes: max(1, bytes/recCacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*recEntry)
	}
	return c
}

func (c *recCache) shard(key []byte) *recShard {
	return &c.shards[maphash.Bytes(c.seed, key)%recCacheShards]
}

// get returns the cached document of the record key (nil when not cached) and whether it is
// known to have no counts beside it. The document must not be modified.
func (c *recCache) get(key []byte) (doc []byte, noCounts bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	if e := sh.m[string(key)]; e != nil {
		doc, noCounts = e.doc, e.noCounts
	}
	sh.mu.Unlock()
	return doc, noCounts
}

// noCounts says whether the record key is known to have no counts beside it.
func (c *recCache) noCounts(key []byte) bool {
	sh := c.shard(key)
	sh.mu.Lock()
	e := sh.m[string(key)]
	no := e != nil && e.noCounts
	sh.mu.Unlock()
	return no
}

// put caches doc, just committed at key. fresh says the record was created under an objectId
// no record had (so nothing was counted for it); an entry already cached keeps what it knew.
func (c *recCache) put(key, doc []byte, fresh bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[string(key)]
	if e != nil {
		sh.bytes -= len(e.doc)
		e.doc = doc
	} else {
		e = &recEntry{doc: doc, noCounts: fresh}
	}
	// Room first (the entry itself is out of the map meanwhile, so it is not the one dropped).
	delete(sh.m, string(key))
	for k, o := range sh.m {
		if len(sh.m) < c.per && sh.bytes+len(doc) <= c.perBytes {
			break
		}
		sh.bytes -= len(o.doc)
		delete(sh.m, k)
	}
	if len(doc) > c.perBytes {
		return // larger than the shard: not kept (e, if it was cached, is dropped with it)
	}
	sh.m[string(key)] = e
	sh.bytes += len(doc)
}

// drop forgets the record key (deleted, or a write whose commit failed).
func (c *recCache) drop(key []byte) {
	sh := c.shard(key)
	sh.mu.Lock()
	if e := sh.m[string(key)]; e != nil {
		sh.bytes -= len(e.doc)
		delete(sh.m, string(key))
	}
	sh.mu.Unlock()
}

// counted says that counts are about to be written beside the record key.
func (c *recCache) counted(key []byte) {
	sh := c.shard(key)
	sh.mu.Lock()
	if e := sh.m[string(key)]; e != nil {
		e.noCounts = false
	}
	sh.mu.Unlock()
}
