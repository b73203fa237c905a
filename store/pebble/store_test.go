package pebble

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/storetest"
)

func openTest(t testing.TB) *Store {
	t.Helper()
	return openTestWith(t, Options{})
}

// openTestWith is openTest with o's other options.
func openTestWith(t testing.TB, o Options) *Store {
	t.Helper()
	o.CacheSize, o.MemTableSize = 8<<20, 4<<20
	s, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// putBenchInsts puts installations benchInst(0) to benchInst(n-1) into s, one synced put each.
func putBenchInsts(t testing.TB, s *Store, n int) {
	t.Helper()
	for i := range n {
		if err := s.PutInstallation(context.Background(), benchApp, benchBuckets, benchInst(i)); err != nil {
			t.Fatal(err)
		}
	}
}

// flushAndCompact flushes s's memtables and compacts all of its keys, so that every row sits
// in a table of the last level.
func flushAndCompact(t testing.TB, s *Store) {
	t.Helper()
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xFF}, true); err != nil {
		t.Fatal(err)
	}
}

func TestStorePebbleContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t) })
}

func TestStoreOpenInUse(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "data directory "+dir+" is in use by another process") {
		t.Fatalf("second Open = %v, want an in-use error", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if _, err := s.GetApp(t.Context(), "x"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("GetApp after Close = %v, want ErrClosed", err)
	}
	// Closed: the directory can be opened again.
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	_ = s2.Close()
}

func TestStoreScanAllocationFree(t *testing.T) {
	if raceEnabled {
		t.Skip("the race build turns on Pebble's invariant checks, which allocate per row")
	}
	s := openTest(t)
	var insts []push.Installation
	for i := 0; i < 2000; i++ {
		insts = append(insts, benchInst(i))
	}
	if err := s.SeedInstallations("app", 1, insts); err != nil {
		t.Fatal(err)
	}
	rows := 0
	fn := func(*store.Row) error { rows++; return nil }
	// AllocsPerRun counts the whole process's allocations, Pebble's background flush of the
	// seeded rows included: the least of three measures is the scan's own.
	allocs := math.Inf(1)
	for range 3 {
		allocs = min(allocs, testing.AllocsPerRun(5, func() {
			if err := s.Scan(t.Context(), store.ScanRange{AppID: "app", Channel: "news", Bucket: 0}, fn); err != nil {
				t.Fatal(err)
			}
		}))
	}
	if rows != 18*2000 {
		t.Fatalf("scanned %d rows, want %d", rows, 18*2000)
	}
	// Per scan: the iterator, bounds, the Route's channel slice and a cursor slab per ~16 KiB of
	// cursors (the race detector adds a few). One allocation per row would show as 2000.
	if allocs > 100 {
		t.Errorf("Scan of 2000 rows made %.0f allocations; want a per-scan constant", allocs)
	}
}

func TestStoreSeedInstallations(t *testing.T) {
	s := openTest(t)
	insts := []push.Installation{benchInst(1), benchInst(2), benchInst(3)}
	if err := s.SeedInstallations("app", 4, insts); err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		got, err := s.GetInstallation(t.Context(), "app", in.ObjectID)
		if err != nil || string(got.Doc) != string(in.Doc) {
			t.Fatalf("seeded %s: %v", in.ObjectID, err)
		}
	}
	if oid, err := s.LookupDevice(t.Context(), "app", push.KindToken, insts[2].DeviceToken); err != nil || oid != insts[2].ObjectID {
		t.Errorf("seeded token lookup = %q, %v", oid, err)
	}
}
