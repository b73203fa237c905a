package pebble

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/bench/procstat"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

const (
	benchApp     = "benchapp"
	benchBuckets = 16
	benchRows    = 64 << 10
)

// benchInst builds installation i with a ~300-byte JSON document.
func benchInst(i int) push.Installation {
	oid := fmt.Sprintf("obj%08d", i)
	dt, tok, iid := push.DeviceAndroid, "", fmt.Sprintf("iid-%08d-0000-4000-8000-000000000000", i)
	if i%3 == 0 {
		dt, tok, iid = push.DeviceIOS, strings.Repeat(fmt.Sprintf("%08x", i), 8), ""
	}
	now := time.Now().UnixMilli()
	doc := fmt.Sprintf(`{"objectId":%q,"deviceType":%q,"deviceToken":%q,"installationId":%q,`+
		`"channels":["news","sport"],"timeZone":"Asia/Shanghai","badge":0,"appVersion":"3.12.1",`+
		`"createdAt":"2024-05-01T10:00:00.000Z","updatedAt":"2024-05-01T10:00:00.000Z","user":"u%d"}`,
		oid, dt, tok, iid, i)
	return push.Installation{
		Route: push.Route{ObjectID: oid, DeviceType: dt, DeviceToken: tok, InstallationID: iid,
			APNsTopic: "com.example.app", Channels: []string{"news", "sport"}, UpdatedAt: now},
		CreatedAt: now,
		Doc:       []byte(doc),
	}
}

// seedBenchInsts writes benchInst(0) to benchInst(n-1) into s through the bulk path.
func seedBenchInsts(s *Store, n int) error {
	insts := make([]push.Installation, n)
	for i := range insts {
		insts[i] = benchInst(i)
	}
	return s.SeedInstallations(benchApp, benchBuckets, insts)
}

var seeded struct {
	once sync.Once
	dir  string
	s    *Store
	err  error
}

// seededStore is one store of benchRows installations shared by the scan benchmarks.
func seededStore(b *testing.B) *Store {
	seeded.once.Do(func() {
		seeded.dir, seeded.err = os.MkdirTemp("", "pushd-store-bench-")
		if seeded.err != nil {
			return
		}
		// A cache that holds the by_bucket rows: the benchmarks measure the CPU cost of a scan,
		// not the disk.
		seeded.s, seeded.err = Open(seeded.dir, Options{CacheSize: 256 << 20})
		if seeded.err != nil {
			return
		}
		if seeded.err = seedBenchInsts(seeded.s, benchRows); seeded.err != nil {
			return
		}
		// Compact everything so scans read settled sstables, as on a long-running node, and no
		// background compaction competes with (or evicts blocks from) the measured loop.
		seeded.err = seeded.s.db.Compact(context.Background(), []byte{0}, []byte{0xFF}, true)
	})
	if seeded.err != nil {
		b.Fatal(seeded.err)
	}
	return seeded.s
}

func TestMain(m *testing.M) {
	code := m.Run()
	if seeded.s != nil {
		_ = seeded.s.Close()
	}
	if seeded.dir != "" {
		_ = os.RemoveAll(seeded.dir)
	}
	for _, dir := range coldStores.dirs {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// BenchmarkStoreScanRaw is the ceiling: bare Pebble iteration over every by_bucket row.
func BenchmarkStoreScanRaw(b *testing.B) {
	s := seededStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	var rows, bytes int64
	for b.Loop() {
		for bk := 0; bk < benchBuckets; bk++ {
			prefix := bucketPrefix(nil, benchApp, bk)
			it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
			if err != nil {
				b.Fatal(err)
			}
			for valid := it.First(); valid; valid = it.Next() {
				v, err := it.ValueAndErr()
				if err != nil {
					b.Fatal(err)
				}
				rows++
				bytes += int64(len(v))
			}
			if err := it.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if rows != int64(b.N)*benchRows {
		b.Fatalf("scanned %d rows, want %d", rows, int64(b.N)*benchRows)
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(bytes)/float64(rows), "B/row")
}

// BenchmarkStoreScanRoute is Scan as fan-out calls it: route decoded per row, document aliased.
func BenchmarkStoreScanRoute(b *testing.B) {
	s := seededStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var rows, ios int64
	fn := func(r *store.Row) error {
		rows++
		if r.Route.DeviceType == push.DeviceIOS && len(r.Route.DeviceToken) > 0 {
			ios++
		}
		return nil
	}
	for b.Loop() {
		for bk := 0; bk < benchBuckets; bk++ {
			if err := s.Scan(ctx, store.ScanRange{AppID: benchApp, Bucket: bk}, fn); err != nil {
				b.Fatal(err)
			}
		}
	}
	if rows != int64(b.N)*benchRows || ios == 0 {
		b.Fatalf("scanned %d rows (%d ios), want %d", rows, ios, int64(b.N)*benchRows)
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkStorePutInstallation measures synced single-installation writes (document, by_bucket,
// two channels, device id, updatedAt index), serially and from 16 writers (Pebble group commit).
func BenchmarkStorePutInstallation(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openTest(b)
			ctx := context.Background()
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(writers)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.PutInstallation(ctx, benchApp, benchBuckets, benchInst(int(next.Add(1)))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "puts/s")
		})
	}
}

// coldStores holds, per block size, a closed store of coldRows installations, compacted: each
// iteration of the cold benchmarks opens it with an empty block cache (the OS's page cache
// is warm), as a fan-out's first scan of a span or a lookup of a row not read lately finds it.
var coldStores struct {
	sync.Mutex
	dirs map[int]string
}

const coldRows = 100_000

func coldStore(b *testing.B, blockSize int) string {
	coldStores.Lock()
	defer coldStores.Unlock()
	if dir, ok := coldStores.dirs[blockSize]; ok {
		return dir
	}
	dir, err := os.MkdirTemp("", "pushd-store-cold-")
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(dir, Options{blockSize: blockSize})
	if err != nil {
		b.Fatal(err)
	}
	if err = seedBenchInsts(s, coldRows); err == nil {
		err = s.db.Compact(context.Background(), []byte{0}, []byte{0xFF}, true)
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	if coldStores.dirs == nil {
		coldStores.dirs = map[int]string{}
	}
	coldStores.dirs[blockSize] = dir
	return dir
}

// BenchmarkStoreCold compares Pebble's 4 KiB table blocks with the store's 32 KiB (Open) on
// reads that start with an empty block cache: a scan of every by_bucket row, and 20,000 reads
// of installations and device rows spread over the store (no row cache). It reports CPU per
// row and per read, the process's (rusage), which counts Pebble's background goroutines too.
func BenchmarkStoreCold(b *testing.B) {
	const reads = 20_000
	for _, bs := range []int{4 << 10, tableBlockSize} {
		dir := coldStore(b, bs)
		open := func(b *testing.B) *Store {
			b.StopTimer()
			defer b.StartTimer()
			s, err := Open(dir, Options{blockSize: bs, DeviceCacheEntries: -1, InstallationCacheSize: -1})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
		closeStore := func(b *testing.B, s *Store) {
			b.StopTimer()
			defer b.StartTimer()
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("block=%dKiB/scan", bs>>10), func(b *testing.B) {
			ctx := context.Background()
			var rows int64
			var cpu time.Duration
			for b.Loop() {
				s := open(b)
				c0 := procstat.CPU(b)
				for bk := range benchBuckets {
					if err := s.Scan(ctx, store.ScanRange{AppID: benchApp, Bucket: bk}, func(*store.Row) error { rows++; return nil }); err != nil {
						b.Fatal(err)
					}
				}
				cpu += procstat.CPU(b) - c0
				closeStore(b, s)
			}
			if rows != int64(b.N)*coldRows {
				b.Fatalf("scanned %d rows, want %d", rows, int64(b.N)*coldRows)
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(rows), "cpu-ns/row")
		})
		b.Run(fmt.Sprintf("block=%dKiB/get", bs>>10), func(b *testing.B) {
			ctx := context.Background()
			rows := make([]push.Route, reads)
			for r := range rows {
				rows[r] = benchInst(r * 7919 % coldRows).Route // 7919 is prime: every read a new row
			}
			var cpu time.Duration
			for b.Loop() {
				s := open(b)
				c0 := procstat.CPU(b)
				for _, rt := range rows {
					if _, err := s.GetInstallation(ctx, benchApp, rt.ObjectID); err != nil {
						b.Fatal(err)
					}
					kind, id := push.KindIID, rt.InstallationID
					if id == "" {
						kind, id = push.KindToken, rt.DeviceToken
					}
					if oid, err := s.LookupDevice(ctx, benchApp, kind, id); err != nil || oid != rt.ObjectID {
						b.Fatalf("LookupDevice(%s) = %q, %v; want %s", id, oid, err, rt.ObjectID)
					}
				}
				cpu += procstat.CPU(b) - c0
				closeStore(b, s)
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*reads), "cpu-ns/read")
		})
	}
}
