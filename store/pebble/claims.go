package pebble

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// claimMemo remembers the req_id claims of this store while they may make a push a duplicate,
// so that claiming a req_id nobody holds (nearly every call) skips the read that looks for an
// earlier claim: a point lookup that misses every memtable and table, about a twentieth of
// the API's CPU per accepted push.
//
// It vouches for "no live claim" only at a claim time at or after complete: every claim live
// then is in it, because it was loaded when the store opened or made through this store since.
// For earlier times, and for every key it holds live, the store reads Pebble as before. Keys
// are kept as 64-bit hashes (a collision only costs that read), with the claim's expiry.
//
// Memory: at most claimMemoMax keys (about 40 MB). Expired keys are swept as the memo grows;
// one that is full forgets everything and vouches for nothing until the last expiry it held.
type claimMemo struct {
	mu       sync.Mutex
	seed     maphash.Seed
	complete int64            // unix ns: every claim live at or after it is in m
	m        map[uint64]int64 // hash of the claim's key → its expiry (unix ns)
	sweepAt  int              // len(m) at which the next sweep runs
}

var (
	// claimMemoMax bounds the keys held; claimMemoLoad bounds the claims read at open (past
	// it the memo starts empty, vouching for nothing until claimMemoHorizon has passed).
	claimMemoMax  = 1 << 21
	claimMemoLoad = 1 << 20
)

// claimMemoHorizon is the longest req_id window the memo vouches for after an open that did
// not load the claims (pushapi.ReqIDWindow is 5 minutes).
const claimMemoHorizon = time.Hour

// sweepSlack keeps a claim swept that long after its expiry: a caller's claim time may lag
// the store's clock a little.
const sweepSlack = time.Minute

// loadClaimMemo reads the claims of db live at now into a new memo.
func loadClaimMemo(db *pebble.DB, now time.Time) (*claimMemo, error) {
	c := &claimMemo{seed: maphash.MakeSeed(), complete: math.MinInt64, m: make(map[uint64]int64), sweepAt: 1024}
	lower := []byte{tReqID}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	cut := now.Add(-sweepSlack).UnixNano()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n > claimMemoLoad { // too many to hold: vouch for nothing that they may cover
			clear(c.m)
			c.complete = now.Add(claimMemoHorizon).UnixNano()
			return c, nil
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		if _, expires, ok := decodeClaim(v); ok && expires.UnixNano() > cut {
			c.m[c.hash(it.Key())] = expires.UnixNano()
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	c.complete = cut
	c.sweepAt = max(c.sweepAt, 2*len(c.m))
	return c, nil
}

func (c *claimMemo) hash(key []byte) uint64 { return maphash.Bytes(c.seed, key) }

// mayHold says whether key may hold a claim live at at: false only when the memo knows it
// does not.
func (c *claimMemo) mayHold(key []byte, at time.Time) bool {
	if c == nil {
		return true
	}
	h, t := c.hash(key), at.UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	if t < c.complete {
		return true
	}
	exp, ok := c.m[h]
	return ok && t < exp
}

// add records a claim of key written to the store, live until expires. The caller holds the
// key's stripe, so the memo and the store agree for the next claim of key.
func (c *claimMemo) add(key []byte, expires, now time.Time) {
	if c == nil {
		return
	}
	h := c.hash(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[h] = expires.UnixNano()
	if len(c.m) < c.sweepAt && len(c.m) < claimMemoMax {
		return
	}
	// Forget the expired claims; the memo then vouches only from the sweep's cut on.
	cut := now.Add(-sweepSlack).UnixNano()
	for k, exp := range c.m {
		if exp <= cut {
			delete(c.m, k)
		}
	}
	c.complete = max(c.complete, cut)
	if len(c.m) >= claimMemoMax {
		last := c.complete
		for _, exp := range c.m {
			last = max(last, exp)
		}
		clear(c.m)
		c.complete = last
	}
	c.sweepAt = max(1024, 2*len(c.m))
}

// len is the number of keys held.
func (c *claimMemo) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
