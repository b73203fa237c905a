package pebble

import (
	"context"
	"fmt"
	"testing"
)

// TestStoreBlockCacheHoldsBlocks guards the cache sizing in Open: Pebble reserves its
// memtables inside the block cache, and a cache sized like the memtables once held nothing,
// so every Get read its blocks from the file. With the default options, repeated reads of
// flushed installations must be served from the cache, and Gets of absent ids must be
// answered by the tables' Bloom filters. The sizes are the test stores' (openTest); enough
// installations are written for the memtables to grow to their full size. The installation
// cache (rowcache.go), which would answer the reads before Pebble, is off.
func TestStoreBlockCacheHoldsBlocks(t *testing.T) {
	s := openTestWith(t, Options{InstallationCacheSize: -1})
	ctx := context.Background()
	const written, n = 8000, 1000
	putBenchInsts(t, s, written)
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	read := func() {
		for i := range n {
			if _, err := s.GetInstallation(ctx, benchApp, fmt.Sprintf("obj%08d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	read()
	before := s.db.Metrics().BlockCache
	read()
	after := s.db.Metrics().BlockCache
	if after.Count == 0 {
		t.Fatalf("block cache holds no blocks after two passes over %d installations", n)
	}
	// A compaction finishing between the passes moves rows to new tables, whose blocks the
	// second pass reads once: allow a few misses, not a cold cache.
	hits, misses := after.Hits-before.Hits, after.Misses-before.Misses
	if hits < 9*(hits+misses)/10 {
		t.Errorf("second pass over %d flushed installations: %d block cache hits, %d misses; want at least 90%% hits", n, hits, misses)
	}

	// Pebble's Get reads no filter in L6, where compactions may have moved every table by now
	// (sooner with value separation, whose tables are small): a few more installations, flushed,
	// give L0 a table whose range covers the absent ids below, which sort among the written ones.
	for i := written; i < written+10; i++ {
		if err := s.PutInstallation(ctx, benchApp, benchBuckets, benchInst(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	filterBefore := s.db.Metrics().Filter
	for i := range n {
		if _, err := s.GetInstallation(ctx, benchApp, fmt.Sprintf("obj%08dx", i)); err == nil {
			t.Fatalf("installation obj%08dx found, never written", i)
		}
	}
	if hits := s.db.Metrics().Filter.Hits - filterBefore.Hits; hits < n*9/10 {
		t.Errorf("Bloom filters ruled out %d of %d absent ids, want at least 90%%", hits, n)
	}
}
