package pebble

import (
	"context"
	"flag"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncCountFS counts the fsyncs of WAL files (*.log).
type syncCountFS struct {
	vfs.FS
	syncs *atomic.Int64
}

func (f syncCountFS) wrap(name string, file vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return file, err
	}
	return syncCountFile{file, f.syncs}, nil
}

func (f syncCountFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.Create(name, c)
	return f.wrap(name, file, err)
}

func (f syncCountFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(oldname, newname, c)
	return f.wrap(newname, file, err)
}

func (f syncCountFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name, c, opts...)
	return f.wrap(name, file, err)
}

type syncCountFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f syncCountFile) Sync() error { f.syncs.Add(1); return f.File.Sync() }

func (f syncCountFile) SyncData() error { f.syncs.Add(1); return f.File.SyncData() }

func (f syncCountFile) SyncTo(n int64) (bool, error) { f.syncs.Add(1); return f.File.SyncTo(n) }

// TestStoreWALMinSyncIntervalSharesFsyncs: with a minimum interval between WAL fsyncs, the WAL
// is never fsynced more often than that, however many synced writes arrive, and every write
// still returns (durable; the crash tests cover durability with the default options).
func TestStoreWALMinSyncIntervalSharesFsyncs(t *testing.T) {
	const interval = maxWALMinSyncInterval
	var syncs atomic.Int64
	s, err := Open(t.TempDir(), Options{CacheSize: 8 << 20, MemTableSize: 4 << 20,
		WALMinSyncInterval: interval, FS: syncCountFS{vfs.Default, &syncs}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	const writers, each = 16, 5
	before := syncs.Load()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.PutInstallation(ctx, benchApp, benchBuckets, benchInst(w*each+i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := syncs.Load() - before
	if n == 0 {
		t.Fatal("no WAL fsync counted: the test no longer sees the WAL files")
	}
	// One fsync per interval at most, plus the one a waiting commit starts at once.
	if limit := int64(elapsed/interval) + 1; n > limit {
		t.Errorf("%d synced writes in %v took %d WAL fsyncs, want at most %d (one per %v)", writers*each, elapsed, n, limit, interval)
	}
}

func TestStoreWALMinSyncIntervalFlag(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		var o Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		o.RegisterFlags(fs, "pebble-")
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		return o, o.Validate()
	}
	for _, tc := range []struct {
		arg  string
		want time.Duration // what Open gives Pebble; 0 is none
	}{
		{"", DefaultWALMinSyncInterval},
		{"0", 0},
		{"250us", 250 * time.Microsecond},
		{"10ms", 10 * time.Millisecond},
	} {
		var args []string
		if tc.arg != "" {
			args = []string{"--pebble-wal-min-sync-interval", tc.arg}
		}
		o, err := parse(args...)
		if err != nil {
			t.Errorf("%q: %v", tc.arg, err)
			continue
		}
		if got := o.walMinSyncInterval(); got != tc.want {
			t.Errorf("%q: Open would use %v, want %v", tc.arg, got, tc.want)
		}
	}
	for _, bad := range []string{"-1ms", "11ms", "soon"} {
		if _, err := parse("--pebble-wal-min-sync-interval", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := (&Options{}).walMinSyncInterval(); got != DefaultWALMinSyncInterval {
		t.Errorf("zero Options: %v, want the default %v", got, DefaultWALMinSyncInterval)
	}
}
