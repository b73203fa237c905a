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
