package pebble

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"testing"
)

// TestRowCacheRingAgainstAModel: random sets, rewrites, forgets and clears of values of random
// sizes, in a ring many times smaller than what is written, so that it wraps and evicts
// throughout. Every hit must be the last value set for its key, the most recent sets must hit,
// and the live entries' count and bytes must match what the cache holds.
func TestRowCacheRingAgainstAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := newRowCache[[]byte](0, 64*rowCacheShards*300) // 19,200 bytes a shard
	last := map[string][]byte{}                        // the last value set, nil once forgotten
	var recent []string
	for i := range 200_000 {
		key := fmt.Sprintf("key-%d", rng.IntN(5000))
		switch op := rng.IntN(100); {
		case i == 100_000:
			c.clear()
			clear(last)
		case op < 80:
			v := bytes.Repeat([]byte{byte(i)}, rng.IntN(600))
			v = fmt.Appendf(v, "#%d", i)
			c.set([]byte(key), v)
			last[key] = v
			recent = append(recent, key)
		case op < 95:
			c.forget([]byte(key))
			last[key] = nil
		default:
			got, _, ok := c.get([]byte(key))
			if ok && !bytes.Equal(got, last[key]) {
				t.Fatalf("step %d: %s = %q, last set %q", i, key, got, last[key])
			}
		}
		if len(recent) > 8 {
			recent = recent[1:]
		}
	}
	// The last key set is in the cache (a shard keeps at least its newest entry, all of them
	// below the ring's size); every hit is the last value set.
	if k := recent[len(recent)-1]; last[k] != nil {
		if got, _, ok := c.get([]byte(k)); !ok || !bytes.Equal(got, last[k]) {
			t.Errorf("the newest entry %s: %q (hit %v), want %q", k, got, ok, last[k])
		}
	}
	entries, size := 0, 0
	for k, v := range last {
		got, _, ok := c.get([]byte(k))
		if !ok {
			continue
		}
		if v == nil || !bytes.Equal(got, v) {
			t.Fatalf("%s = %q, last set %q", k, got, v)
		}
		entries++
		size += len(k) + len(v) + rowEntryOverhead
	}
	if n, b := c.len(); n != entries || b != size {
		t.Errorf("len() = %d entries, %d bytes; the hits are %d entries, %d bytes", n, b, entries, size)
	}
	// Within its bound, and its evictions drop only the oldest: of 5,000 keys of 300 bytes on
	// average (1.5 MB) the cache of 1.2 MB keeps about 65% live (dead copies of rewritten and
	// forgotten keys take the rest); an eviction that dropped a rewritten key's newer entry
	// with its old copy left 48%.
	if _, b := c.len(); b > 64*rowCacheShards*300 || b < 64*rowCacheShards*300*55/100 {
		t.Errorf("%d bytes live in a cache of %d", b, 64*rowCacheShards*300)
	}
}

// TestRowCacheHoldsNoPointers: a cache full of rows adds nothing the collector scans, where a
// map of strings added a key and a value to mark per row; a write allocates nothing once the
// shard's ring exists.
func TestRowCacheHoldsNoPointers(t *testing.T) {
	scannable := func() uint64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			t.Skip("no /gc/scan/heap:bytes in this runtime")
		}
		return s[0].Value.Uint64()
	}
	before := scannable()
	c := newRowCache[[]byte](0, 32<<20)
	val := make([]byte, 200)
	key := make([]byte, 0, 32)
	for i := range 100_000 {
		key = fmt.Appendf(key[:0], "installation-%d", i)
		c.set(key, val)
	}
	if n, _ := c.len(); n != 100_000 {
		t.Fatalf("%d entries cached, want 100000", n)
	}
	// 100,000 rows as strings in maps were over 3 MB of keys and slice headers to scan; the
	// index maps here are pointer-free and the rings are bytes.
	if grown := int64(scannable()) - int64(before); grown > 1<<20 {
		t.Errorf("the collector scans %d more bytes with the cache full", grown)
	}
	if allocs := testing.AllocsPerRun(1000, func() { c.set(key, val) }); allocs != 0 {
		t.Errorf("a rewrite allocates %.0f times", allocs)
	}
	runtime.KeepAlive(c)
}
