package pebble

import (
	"runtime"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// Every table, flushed or compacted, is written with Pebble's fastest compression profile
// (MinLZ on amd64), not the Snappy Pebble defaults to: see Open.
func TestStoreTablesUseFastestCompression(t *testing.T) {
	s := openTest(t)
	putBenchInsts(t, s, 500)
	check := func(when string) {
		t.Helper()
		levels, err := s.db.SSTables(pebble.WithProperties())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tables := range levels {
			for _, tb := range tables {
				n++
				p := tb.Properties
				if p.CompressionName != "Fastest" {
					t.Errorf("%s: table %s compressed with %q, want Fastest", when, tb.FileNum, p.CompressionName)
				}
				if runtime.GOARCH == "amd64" && !strings.Contains(strings.ToLower(p.CompressionStats), "minlz") {
					t.Errorf("%s: table %s compression stats %q, want MinLZ blocks", when, tb.FileNum, p.CompressionStats)
				}
			}
		}
		if n == 0 {
			t.Fatalf("%s: no table", when)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	check("flushed")
	flushAndCompact(t, s)
	check("compacted")
}

// The store logs each flush and compaction as it ends, with how long it took.
func TestStoreLogsBackgroundWork(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	s, err := Open(t.TempDir(), Options{MemTableSize: 4 << 20, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	putBenchInsts(t, s, 200)
	flushAndCompact(t, s)
	for _, msg := range []string{"store flush", "store compaction"} {
		es := logs.FilterMessage(msg).All()
		if len(es) == 0 {
			t.Errorf("no %q logged", msg)
			continue
		}
		if _, ok := es[0].ContextMap()["took"]; !ok {
			t.Errorf("%q logged without how long it took: %v", msg, es[0].ContextMap())
		}
	}
}

// Tables are written in blocks of about 32 KiB, not Pebble's 4 KiB, and with a one-level
// index while it fits in 256 KiB: see Open.
func TestStoreTablesUseLargeBlocks(t *testing.T) {
	s := openTest(t)
	if err := seedBenchInsts(s, 5000); err != nil {
		t.Fatal(err)
	}
	flushAndCompact(t, s)
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	var raw, blocks uint64
	for _, tables := range levels {
		for _, tb := range tables {
			p := tb.Properties
			t.Logf("table %s: %d data blocks, %d raw bytes, %d index partitions", tb.FileNum, p.NumDataBlocks, p.RawKeySize+p.RawValueSize, p.IndexPartitions)
			raw += p.RawKeySize + p.RawValueSize
			blocks += p.NumDataBlocks
			if p.IndexPartitions != 0 {
				t.Errorf("table %s has a two-level index (%d partitions), want one level", tb.FileNum, p.IndexPartitions)
			}
		}
	}
	if blocks < 10 {
		t.Fatalf("%d data blocks of %d raw bytes in all: too few to measure their size", blocks, raw)
	}
	// Pebble ends a block between 90% of its target and a row past it; the raw sizes also
	// count the documents moved to blob files (the primary rows'), so the average is a floor.
	// 4 KiB blocks would average about 5 KiB here.
	const want = 32 << 10 * 9 / 10
	if avg := raw / blocks; avg < want {
		t.Errorf("data blocks of %d raw bytes on average, want at least %d", avg, want)
	}
}
