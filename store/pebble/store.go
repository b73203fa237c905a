// Package pebble is the embedded store: every table of CLUSTER.md laid out as Pebble keys in one
// database (keys.go has the layout), which it shares with queue/embedded (keys under 'q').
//
// Concurrency: every method is safe for concurrent use. Writes that must be atomic with
// respect to each other (an installation and its indexes, a push record's read-modify-write,
// counters, claims) hold striped mutexes (locks.go) and commit one batch; installation writes
// apply their batch under the stripes and wait for the WAL fsync after releasing them
// (commit.go), every other write commits a synced batch under its stripe. Either way a write
// returns only once durable. Close waits for calls in flight; later calls fail with
// store.ErrClosed.
package pebble

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/pushd/pushd/store"
)

// Options configure Open. The zero value is valid.
type Options struct {
	// CacheSize is the block cache size in bytes (default 64 MiB), on top of the memory
	// Pebble reserves in the cache for its memtables.
	CacheSize int64
	// MemTableSize is the size of one memtable in bytes (default 64 MiB).
	MemTableSize uint64
	// WALMinSyncInterval is the least time between two fsyncs of the write-ahead log: a synced
	// commit that arrives sooner waits for the next fsync, shared with every commit that
	// arrives meanwhile. Zero means DefaultWALMinSyncInterval; negative means none (every
	// fsync starts as soon as the previous one ends). No commit returns before it is durable
	// either way; see docs/decisions.md, Store 9.
	WALMinSyncInterval time.Duration
	// DeviceCacheEntries bounds how many device ids the store remembers the installation of,
	// to skip Pebble in LookupDevice (devcache.go; about 200 bytes each). Zero means
	// DefaultDeviceCacheEntries; negative means no cache.
	DeviceCacheEntries int
	// InstallationCacheSize bounds the bytes of installations' primary rows the store
	// remembers, to skip Pebble when an update reads the stored installation (rowcache.go).
	// Zero means DefaultInstallationCacheSize; negative means no cache.
	InstallationCacheSize int
	// Logger receives Pebble's own log lines (default: discarded).
	Logger *zap.Logger
	// Now is the clock used where a caller gives no time (default time.Now).
	Now func() time.Time

	// FS is the file system the store lives on (default vfs.Default, the OS's). Tests cut
	// the power on a vfs.NewCrashableMem with its CrashClone: what was not synced is lost.
	FS vfs.FS

	// blockSize is the target size of a table's data blocks (default tableBlockSize), for
	// the benchmarks that compare it with Pebble's 4 KiB.
	blockSize int
}

const (
	defaultCacheSize    = 64 << 20
	defaultMemTableSize = 64 << 20

	// tableBlockSize and tableIndexBlockSize are the target sizes of a table's data and
	// index blocks (Open).
	tableBlockSize      = 32 << 10
	tableIndexBlockSize = 256 << 10

	// DefaultWALMinSyncInterval is the default Options.WALMinSyncInterval.
	DefaultWALMinSyncInterval = 300 * time.Microsecond
	// DefaultDeviceCacheEntries is the default Options.DeviceCacheEntries (about 25 MiB).
	DefaultDeviceCacheEntries = 1 << 17
	// DefaultInstallationCacheSize is the default Options.InstallationCacheSize.
	DefaultInstallationCacheSize = 32 << 20

	// maxWALMinSyncInterval bounds what a synced write may wait for company.
	maxWALMinSyncInterval = 10 * time.Millisecond
)

// RegisterFlags registers the options as flags named prefix+"cache-size",
// prefix+"memtable-size", prefix+"wal-min-sync-interval", prefix+"device-cache-entries" and
// prefix+"installation-cache-size".
func (o *Options) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.Int64Var(&o.CacheSize, prefix+"cache-size", defaultCacheSize, "Pebble block cache size in bytes, on top of the room Pebble reserves in it for the memtables")
	fs.Uint64Var(&o.MemTableSize, prefix+"memtable-size", defaultMemTableSize, "Pebble memtable size in bytes")
	o.WALMinSyncInterval = DefaultWALMinSyncInterval
	fs.Var(noneFlag[time.Duration]{&o.WALMinSyncInterval, time.ParseDuration}, prefix+"wal-min-sync-interval", "least time between two fsyncs of the Pebble WAL; synced writes arriving meanwhile share the next one (0: none, at most 10ms)")
	o.DeviceCacheEntries = DefaultDeviceCacheEntries
	fs.Var(noneFlag[int]{&o.DeviceCacheEntries, strconv.Atoi}, prefix+"device-cache-entries", "how many device ids the store remembers the installation of, about 200 bytes each (0: none)")
	o.InstallationCacheSize = DefaultInstallationCacheSize
	fs.Var(noneFlag[int]{&o.InstallationCacheSize, strconv.Atoi}, prefix+"installation-cache-size", "bytes of installations the store remembers, read or written last (0: none)")
}

// noneFlag is the flag of an option whose zero value means its default and whose negative
// means none (WALMinSyncInterval, DeviceCacheEntries, InstallationCacheSize): the 0 a user
// writes means none.
type noneFlag[T int | time.Duration] struct {
	v     *T
	parse func(string) (T, error)
}

func (f noneFlag[T]) String() string {
	if f.v == nil {
		return ""
	}
	return fmt.Sprint(max(*f.v, 0))
}

func (f noneFlag[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("must not be negative")
	}
	if v == 0 {
		v = -1
	}
	*f.v = v
	return nil
}

// Validate reports options that cannot work.
func (o *Options) Validate() error {
	if o.CacheSize < 0 {
		return fmt.Errorf("cannot use a negative Pebble cache size %d", o.CacheSize)
	}
	if o.MemTableSize != 0 && o.MemTableSize < 1<<20 {
		return fmt.Errorf("cannot use a Pebble memtable smaller than 1 MiB (got %d bytes)", o.MemTableSize)
	}
	if o.WALMinSyncInterval > maxWALMinSyncInterval {
		return fmt.Errorf("cannot make synced writes wait up to %v for a WAL sync (at most %v)", o.WALMinSyncInterval, maxWALMinSyncInterval)
	}
	return nil
}

// walMinSyncInterval is the interval Open gives Pebble; 0 means none.
func (o *Options) walMinSyncInterval() time.Duration {
	return resolveNone(o.WALMinSyncInterval, DefaultWALMinSyncInterval)
}

// deviceCacheEntries is the capacity Open gives the device cache; 0 means none.
func (o *Options) deviceCacheEntries() int {
	return resolveNone(o.DeviceCacheEntries, DefaultDeviceCacheEntries)
}

// installationCacheSize is the size Open gives the installation cache; 0 means none.
func (o *Options) installationCacheSize() int {
	return resolveNone(o.InstallationCacheSize, DefaultInstallationCacheSize)
}

// resolveNone is the value Open uses for an option whose zero value means def and whose
// negative means none, which it returns as 0 (see noneFlag).
func resolveNone[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// valueSeparation is the value separation policy of Open (Pebble's own documentation of
// each field; MaxBlobReferenceDepth, RewriteMinimumAge and TargetGarbageRatio bound how many
// blob files a read may touch and how much garbage updates may leave in them).
var valueSeparation = pebble.ValueSeparationPolicy{
	Enabled:               true,
	MinimumSize:           valueSeparationMin,
	MaxBlobReferenceDepth: 10,
	RewriteMinimumAge:     5 * time.Minute,
	TargetGarbageRatio:    0.2,
}

// scanSpan holds the rows fan-out scans, which are kept out of blob files: by_bucket ('b')
// and by_channel ('c'), adjacent tags (keys.go).
var scanSpan = pebble.KeyRange{Start: []byte{tByBucket}, End: []byte{tByChannel + 1}}

// valueSeparationMin is the least value size kept in blob files: an installation document is
// a few hundred bytes; device, counter and index rows without a document stay inline.
const valueSeparationMin = 256

// Store is the embedded implementation of store.Store.
type Store struct {
	db   *pebble.DB
	lock *pebble.Lock
	dir  string
	now  func() time.Time

	locks   stripes           // per-record write serialisation (locks.go)
	devices *rowCache[string] // device row → object id ("" for none) of recent reads and writes, or nil (rowcache.go)
	insts   *rowCache[[]byte] // primary row → its value, of recent reads and writes, or nil (rowcache.go)
	recs    *recCache         // the push records written last (reccache.go)
	apps    appCache          // the apps read last (apps.go)
	claims  *claimMemo        // the live req_id claims (claims.go)
	absence absence           // narrowed scans that found no row (absence.go)
	dead    *deadApps         // the apps that may hold dead-token marks (deadapps.go)

	afterDeviceRead func() // test hook: runs in LookupDevice between reading Pebble and filling the cache
	afterClaimRead  func() // test hook: runs when a req_id claim reads Pebble for an earlier claim
	afterScanOpen   func() // test hook: runs in ScanBuckets once its iterator holds its snapshot

	gate struct {
		sync.Mutex
		cond     sync.Cond
		inflight int
		closed   bool
	}

	idMu  sync.Mutex       // NextID
	idMax map[string]int64 // last id handed out per name, cached after the first read

	leaseMu sync.Mutex // AcquireLease, RenewLease, ReleaseLease, ClaimScheduled: one compare-and-set at a time; taken after a stripe lock
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the store in dir. A directory already open in this or
// another process fails with an error saying so.
func Open(dir string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create data directory %s: %w", dir, err)
	}
	lock, err := pebble.LockDirectory(dir, fs)
	if err != nil {
		return nil, fmt.Errorf("data directory %s is in use by another process (or by this one): %w", dir, err)
	}
	cacheSize := opts.CacheSize
	if cacheSize == 0 {
		cacheSize = defaultCacheSize
	}
	memSize := opts.MemTableSize
	if memSize == 0 {
		memSize = defaultMemTableSize
	}
	// Pebble reserves every memtable's size inside the block cache (DB.newMemTable calls
	// Cache.Reserve), so a cache no larger than the memtables holds no blocks at all: with
	// 64 MiB of each, every Get read and decompressed its blocks from the file. The cache is
	// sized for the memtables Pebble may hold before it stops writes, plus CacheSize.
	const memTables = 2 // pebble.Options.MemTableStopWritesThreshold, set below
	cache := pebble.NewCache(cacheSize + int64(memTables+1)*int64(memSize))
	defer cache.Unref()
	po := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                memSize,
		MemTableStopWritesThreshold: memTables,
		Lock:                        lock,
		FS:                          fs,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      pebbleLogger{opts.Logger},
		EventListener:               eventListener(opts.Logger),
	}
	// Bloom filters let a Get of an absent key (a new installation, a free device id) skip
	// every table whose filter rules the key out, instead of reading an index and a data block.
	po.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	// Blocks of 32 KiB instead of Pebble's 4 KiB, and index blocks of 256 KiB (CockroachDB's
	// sizes; later levels inherit L0's): a fan-out scan reads every block of its span, and each
	// block read from disk costs a cgo allocation, a cache insert, a pread and an index step
	// whatever its size. A scan of 100,000 installations with an empty block cache cost
	// 0.47–0.67× the CPU per row, and a read of an installation and its device row no more
	// (BenchmarkStoreCold); see docs/decisions.md, "Table blocks of 32 KiB".
	po.Levels[0].BlockSize = cmp.Or(opts.blockSize, tableBlockSize)
	po.Levels[0].IndexBlockSize = tableIndexBlockSize
	// Values of at least valueSeparationMin bytes (installation documents of the primary
	// rows) go to blob files when a memtable is flushed, and
	// compactions then move only their keys and references instead of rewriting the
	// documents at every level. It cut the CPU of an import (pushd import) by about an
	// eighth, measured with no cost to scans; see docs/decisions.md, "Moving an app in".
	po.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy { return valueSeparation }
	// Except for the rows fan-out scans (by_bucket, by_channel): a scan reads every row's
	// value, and one kept in a blob file costs a second block read (cache miss, cgo allocation)
	// per block of rows; the profile of a 100k push spent about a tenth of pushd's CPU there.
	po.Experimental.SpanPolicyFunc = pebble.MakeStaticSpanPolicyFunc(bytes.Compare, scanSpan,
		pebble.SpanPolicy{ValueStoragePolicy: pebble.ValueStorageLowReadLatency})
	// Tables are compressed with Pebble's "fastest" profile (MinLZ on amd64, Snappy on arm64,
	// where MinLZ has no assembly) instead of Snappy everywhere: about the same size on disk,
	// and a little less CPU in flushes, compactions and block reads (0.98× the CPU of a
	// seed-flush-compact-scan run of 200,000 installations; an upsert's cost did not move
	// beyond scripts/bench-ab.sh's 2–3%; docs/decisions.md, "The p99's stalls, and pushes with
	// no target").
	// Tables already written keep their compression: each block names its own.
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionFastest })
	if d := opts.walMinSyncInterval(); d > 0 {
		po.WALMinSyncInterval = func() time.Duration { return d }
	}
	db, err := pebble.Open(dir, po)
	if err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("cannot open pebble store in %s: %w", dir, err)
	}
	s := &Store{db: db, lock: lock, dir: dir, now: opts.Now, idMax: map[string]int64{}, devices: newRowCache[string](opts.deviceCacheEntries(), 0), insts: newRowCache[[]byte](0, opts.installationCacheSize()), recs: newRecCache(recCacheEntries, recCacheBytes)}
	if s.now == nil {
		s.now = time.Now
	}
	s.gate.cond.L = &s.gate.Mutex
	if s.claims, err = loadClaimMemo(db, s.now()); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("cannot read the req_id claims in %s: %w", dir, err)
	}
	if s.dead, err = loadDeadApps(db); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("cannot read the dead-token marks in %s: %w", dir, err)
	}
	if err := s.releaseLeases(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// DB is the underlying database, for queue/embedded. The store never writes keys starting with
// 'q'. Close the log before the store: Close closes the database.
func (s *Store) DB() *pebble.DB { return s.db }

// Close waits for calls in flight, then closes the database and releases the directory.
func (s *Store) Close() error {
	s.gate.Lock()
	if s.gate.closed {
		s.gate.Unlock()
		return store.ErrClosed
	}
	s.gate.closed = true
	for s.gate.inflight > 0 {
		s.gate.cond.Wait()
	}
	s.gate.Unlock()
	err := s.db.Close()
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("cannot close pebble store in %s: %w", s.dir, err)
	}
	return nil
}

// enter admits one call; the caller must call s.exit() when done.
func (s *Store) enter() error {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.gate.closed {
		return store.ErrClosed
	}
	s.gate.inflight++
	return nil
}

func (s *Store) exit() {
	s.gate.Lock()
	s.gate.inflight--
	if s.gate.inflight == 0 && s.gate.closed {
		s.gate.cond.Broadcast()
	}
	s.gate.Unlock()
}

// get returns a copy of the value at key, or store.ErrNotFound.
func (s *Store) get(key []byte) ([]byte, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	_ = closer.Close()
	return out, nil
}

// has says whether key exists, and if so appends its value to dst.
func (s *Store) getInto(dst, key []byte) ([]byte, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	dst = append(dst, v...)
	_ = closer.Close()
	return dst, true, nil
}

// iterate visits every key in [lower, upper) in order. k and v are valid only during fn.
func (s *Store) iterate(lower, upper []byte, fn func(k, v []byte) error) (err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	return it.Error()
}

// eventListener logs the store's background work as it ends, each flush and compaction with
// how much it moved and how long it took, and write stalls as they begin and end: a latency
// tail under load lines up with them (docs/decisions.md, "The p99's stalls, and pushes with no
// target"). nil without a logger.
func eventListener(l *zap.Logger) *pebble.EventListener {
	if l == nil {
		return nil
	}
	return &pebble.EventListener{
		FlushEnd: func(info pebble.FlushInfo) {
			l.Info("store flush", zap.Stringer("flush", info), zap.Duration("took", info.TotalDuration))
		},
		CompactionEnd: func(info pebble.CompactionInfo) {
			l.Info("store compaction", zap.Stringer("compaction", info), zap.Duration("took", info.TotalDuration))
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			l.Warn("store writes stalled", zap.String("reason", info.Reason))
		},
		WriteStallEnd: func() { l.Info("store writes resumed") },
	}
}

type pebbleLogger struct{ l *zap.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l != nil {
		p.l.Sugar().Infof(format, args...)
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	if p.l != nil {
		p.l.Sugar().Errorf(format, args...)
	}
}

func (p pebbleLogger) Fatalf(format string, args ...any) {
	if p.l != nil {
		p.l.Sugar().Errorf(format, args...)
	}
	panic(fmt.Sprintf("pebble: fatal: "+format, args...))
}
