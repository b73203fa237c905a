package pebble

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// Every table, flushed or compacted, is written with Pebble's fastest compression profile
// (MinLZ on amd64), not the Snappy Pebble defaults to: see Open.
func TestStoreTablesUseFastestCompression(t *testing.T) {
	s, err := Open(t.TempDir(), Options{CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := range 500 {
		if err := s.PutInstallation(ctx, benchApp, benchBuckets, benchInst(i)); err != nil {
			t.Fatal(err)
		}
	}
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
	if err := s.db.Compact(ctx, []byte{0}, []byte{0xFF}, true); err != nil {
		t.Fatal(err)
	}
	check("compacted")
}
