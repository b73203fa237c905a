package pebble

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// TestRowCacheFillAfterForget: a value read before a change must not be cached after the
// change forgot (or learnt) the key, even though the reader missed before it.
func TestRowCacheFillAfterForget(t *testing.T) {
	c := newRowCache[string](1024, 0)
	key := []byte("d-key")
	_, gen, ok := c.get(key)
	if ok {
		t.Fatal("empty cache hit")
	}
	c.forget(key) // a writer changed the row after the reader's miss
	c.fill(key, "stale", gen)
	if oid, _, ok := c.get(key); ok {
		t.Fatalf("stale fill cached %q", oid)
	}
	_, gen, _ = c.get(key)
	c.set([]byte("other-key-same-or-not"), "x")
	c.set(key, "written")
	c.fill(key, "read-before", gen)
	if oid, _, ok := c.get(key); !ok || oid != "written" {
		t.Fatalf("a fill after a set: %q, %v; want the value set", oid, ok)
	}
	c.forget(key)
	_, gen, _ = c.get(key)
	c.fill(key, "fresh", gen)
	if oid, _, ok := c.get(key); !ok || oid != "fresh" {
		t.Fatalf("fill after a clean miss: %q, %v", oid, ok)
	}
	c.clear()
	if oid, _, ok := c.get(key); ok {
		t.Fatalf("cleared cache still holds %q", oid)
	}
	if n, b := c.len(); n != 0 || b != 0 {
		t.Fatalf("cleared cache counts %d entries, %d bytes", n, b)
	}
}

func TestRowCacheBounded(t *testing.T) {
	c := newRowCache[string](256, 0)
	for i := range 10000 {
		key := fmt.Appendf(nil, "key-%d", i)
		_, gen, _ := c.get(key)
		c.fill(key, "o", gen)
	}
	if n, _ := c.len(); n > 256 || n < 128 {
		t.Fatalf("cache of 256 entries holds %d", n)
	}
	// A byte bound: values of 1,000 bytes in a cache of 256 KiB.
	const size = 256 << 10
	bc := newRowCache[[]byte](0, size)
	val := make([]byte, 1000)
	for i := range 10000 {
		bc.set(fmt.Appendf(nil, "key-%d", i), val)
	}
	n, b := bc.len()
	if b > size || b < size/2 || n != b/(len("key-9999")+len(val)+rowEntryOverhead) {
		t.Fatalf("cache of %d bytes holds %d entries counted as %d bytes", size, n, b)
	}
	// Rewriting a key replaces its bytes; forgetting it returns them.
	bc.clear()
	bc.set([]byte("k"), val)
	bc.set([]byte("k"), val[:10])
	if n, b := bc.len(); n != 1 || b != 1+10+rowEntryOverhead {
		t.Fatalf("one key rewritten: %d entries, %d bytes", n, b)
	}
	bc.forget([]byte("k"))
	if n, b := bc.len(); n != 0 || b != 0 {
		t.Fatalf("the key forgotten: %d entries, %d bytes", n, b)
	}
	// A value larger than a shard's bound is not kept.
	bc.set([]byte("big"), make([]byte, size))
	if _, _, ok := bc.get([]byte("big")); ok {
		t.Fatal("a value over a shard's bound was cached")
	}
	if newRowCache[string](0, 0) != nil || newRowCache[string](-1, -1) != nil {
		t.Fatal("a cache of no entries exists")
	}
}

// TestStoreDeviceCacheFollowsEveryWriter: lookups are served from the cache once filled (an id
// no installation holds too); a put leaves the device rows it wrote in the cache (under their
// stripes), and each other writer of device rows (delete, sweep, seed) makes the store forget
// what it changed.
func TestStoreDeviceCacheFollowsEveryWriter(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	cached := func(iid string) (string, bool) {
		oid, _, ok := s.devices.get(deviceKey(nil, "app", string(push.KindIID), iid))
		return oid, ok
	}
	lookup := func(iid, want string) {
		t.Helper()
		oid, err := s.LookupDevice(ctx, "app", push.KindIID, iid)
		if want == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("LookupDevice(%s) = %q, %v; want not found", iid, oid, err)
			}
			if oid, ok := cached(iid); !ok || oid != "" {
				t.Fatalf("after a lookup of absent %s the cache holds %q, %v; want it known absent", iid, oid, ok)
			}
			return
		}
		if err != nil || oid != want {
			t.Fatalf("LookupDevice(%s) = %q, %v; want %s", iid, oid, err, want)
		}
		if oid, ok := cached(iid); !ok || oid != want {
			t.Fatalf("after a lookup the cache holds %q, %v; want %s", oid, ok, want)
		}
	}
	now := time.Now()
	if err := s.PutInstallation(ctx, "app", 4, instAt("o1", "iid1", now)); err != nil {
		t.Fatal(err)
	}
	if oid, ok := cached("iid1"); !ok || oid != "o1" {
		t.Fatalf("after the put that wrote it, the cache holds %q, %v; want o1", oid, ok)
	}
	lookup("iid1", "o1")
	// A refresh with the same id writes no device row and keeps the entry.
	if err := s.PutInstallation(ctx, "app", 4, instAt("o1", "iid1", now.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	if _, ok := cached("iid1"); !ok {
		t.Fatal("a refresh with the same id dropped the entry")
	}
	// Put: the id moves away from o1.
	if err := s.PutInstallation(ctx, "app", 4, instAt("o1", "iid2", now)); err != nil {
		t.Fatal(err)
	}
	if oid, ok := cached("iid1"); ok {
		t.Fatalf("the id o1 gave up is still cached as %q", oid)
	}
	if oid, ok := cached("iid2"); !ok || oid != "o1" {
		t.Fatalf("the id o1 took is cached as %q, %v; want o1", oid, ok)
	}
	lookup("iid1", "")
	lookup("iid2", "o1")
	// Delete.
	if err := s.DeleteInstallation(ctx, "app", 4, "o1"); err != nil {
		t.Fatal(err)
	}
	lookup("iid2", "")
	// Seed, then sweep.
	old := now.Add(-200 * 24 * time.Hour)
	if err := s.SeedInstallations("app", 4, []push.Installation{instAt("o2", "iid2", old)}); err != nil {
		t.Fatal(err)
	}
	lookup("iid2", "o2")
	if n, err := s.DeleteInactive(ctx, "app", 4, now.Add(-push.InactiveAfter), 10); err != nil || n != 1 {
		t.Fatalf("DeleteInactive = %d, %v; want 1", n, err)
	}
	lookup("iid2", "")
}

// TestStoreDeviceCacheLookupRacingADelete: a lookup that read the device row just before a
// delete may answer the old owner, but must not leave it cached.
func TestStoreDeviceCacheLookupRacingADelete(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	if err := s.PutInstallation(ctx, "app", 4, instAt("o1", "iid1", time.Now())); err != nil {
		t.Fatal(err)
	}
	s.devices.clear() // the put left the row cached: the lookup below must read it
	s.afterDeviceRead = func() {
		s.afterDeviceRead = nil
		if err := s.DeleteInstallation(ctx, "app", 4, "o1"); err != nil {
			t.Error(err)
		}
	}
	if oid, err := s.LookupDevice(ctx, "app", push.KindIID, "iid1"); err != nil || oid != "o1" {
		t.Fatalf("racing lookup = %q, %v; want o1, read before the delete", oid, err)
	}
	if oid, err := s.LookupDevice(ctx, "app", push.KindIID, "iid1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lookup after the delete = %q, %v; want not found", oid, err)
	}
}

// TestStoreDeviceCacheUnderConcurrentWriters moves device ids between installations, deletes
// and recreates installations, and looks ids up, all at once; afterwards every lookup must
// answer what the device row in Pebble says. Run under the race detector by make test.
func TestStoreDeviceCacheUnderConcurrentWriters(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	const ids, objs, workers, rounds = 16, 6, 6, 400
	iid := func(i int) string { return fmt.Sprintf("iid%d", i) }
	concurrently(t, workers, rounds, 1, func(rng *rand.Rand, _, _ int) error {
		oid := fmt.Sprintf("o%d", rng.IntN(objs))
		switch rng.IntN(8) {
		case 0:
			return s.DeleteInstallation(ctx, "app", 4, oid)
		case 1, 2:
			return s.PutInstallation(ctx, "app", 4, instAt(oid, iid(rng.IntN(ids)), time.Now()))
		default:
			_, err := s.LookupDevice(ctx, "app", push.KindIID, iid(rng.IntN(ids)))
			return err
		}
	})
	// A stale entry would answer these lookups; a missing one is read from Pebble.
	for i := range ids {
		want := pebbleValue(t, s, deviceKey(nil, "app", string(push.KindIID), iid(i)))
		got, err := s.LookupDevice(ctx, "app", push.KindIID, iid(i))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("LookupDevice(%s) = %q, device row says %q", iid(i), got, want)
		}
	}
}

// TestStoreRowCacheOptions: each cache can be turned off (the store then reads Pebble), and
// its flag gives Open the size asked for, the default, or none.
func TestStoreRowCacheOptions(t *testing.T) {
	ctx := context.Background()
	for _, off := range []Options{{DeviceCacheEntries: -1}, {InstallationCacheSize: -1}} {
		s, err := Open(t.TempDir(), off)
		if err != nil {
			t.Fatal(err)
		}
		if (off.DeviceCacheEntries < 0) != (s.devices == nil) || (off.InstallationCacheSize < 0) != (s.insts == nil) {
			t.Fatalf("%+v: device cache %v, installation cache %v", off, s.devices != nil, s.insts != nil)
		}
		for _, ch := range []string{"a", "b"} {
			if err := s.PutInstallation(ctx, "app", 4, instIn("o1", "iid1", time.Now(), ch)); err != nil {
				t.Fatal(err)
			}
		}
		if oid, err := s.LookupDevice(ctx, "app", push.KindIID, "iid1"); err != nil || oid != "o1" {
			t.Fatalf("%+v: LookupDevice = %q, %v", off, oid, err)
		}
		if inst, err := s.GetInstallation(ctx, "app", "o1"); err != nil || !slices.Equal(inst.Channels, []string{"b"}) {
			t.Fatalf("%+v: GetInstallation = %+v, %v", off, inst, err)
		}
		_ = s.Close()
	}

	parse := func(args ...string) (Options, error) {
		var o Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		o.RegisterFlags(fs, "pebble-")
		return o, fs.Parse(args)
	}
	for _, f := range []struct {
		name string
		def  int
		size func(*Options) int // what Open uses; 0 is none
	}{
		{"--pebble-device-cache-entries", DefaultDeviceCacheEntries, (*Options).deviceCacheEntries},
		{"--pebble-installation-cache-size", DefaultInstallationCacheSize, (*Options).installationCacheSize},
	} {
		for _, tc := range []struct {
			args []string
			want int
		}{
			{nil, f.def},
			{[]string{f.name, "0"}, 0},
			{[]string{f.name, "5000"}, 5000},
		} {
			o, err := parse(tc.args...)
			if err != nil {
				t.Errorf("%q: %v", tc.args, err)
				continue
			}
			if got := f.size(&o); got != tc.want {
				t.Errorf("%q: Open would use %d, want %d", tc.args, got, tc.want)
			}
		}
		for _, bad := range []string{"-1", "many"} {
			if _, err := parse(f.name, bad); err == nil {
				t.Errorf("%s %q accepted", f.name, bad)
			}
		}
		if got := f.size(&Options{}); got != f.def {
			t.Errorf("zero Options: %s %d, want the default %d", f.name, got, f.def)
		}
	}
}

// TestStoreDeviceCacheAbsentLookupRacingAPut: a lookup that found no row just before a put
// wrote it may answer none, but must not leave the id cached as absent: the put's own
// duplicate check, and every later lookup, would trust it.
func TestStoreDeviceCacheAbsentLookupRacingAPut(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	s.afterDeviceRead = func() {
		s.afterDeviceRead = nil
		if err := s.PutInstallation(ctx, "app", 4, instAt("o1", "iid1", time.Now())); err != nil {
			t.Error(err)
		}
	}
	if oid, err := s.LookupDevice(ctx, "app", push.KindIID, "iid1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("racing lookup = %q, %v; want not found, read before the put", oid, err)
	}
	if oid, err := s.LookupDevice(ctx, "app", push.KindIID, "iid1"); err != nil || oid != "o1" {
		t.Fatalf("lookup after the put = %q, %v; want o1", oid, err)
	}
	if err := s.PutInstallation(ctx, "app", 4, instAt("o2", "iid1", time.Now())); !errors.Is(err, store.ErrDuplicate) {
		t.Fatalf("another installation taking iid1 = %v, want store.ErrDuplicate", err)
	}
}

// instCacheAgrees fails t if the installation cache holds, for any of oids, a value other than
// the primary row in Pebble (or holds one Pebble does not have), and checks that every index
// row of the app points at an installation that has it (a put that read a stale route leaves
// the rows of the version before behind).
func instCacheAgrees(t *testing.T, s *Store, oids ...string) {
	t.Helper()
	for _, oid := range oids {
		key := instKey(nil, "app", oid)
		want := pebbleValue(t, s, key)
		if got, _, ok := s.insts.get(key); ok && (want == nil || string(got) != string(want)) {
			t.Fatalf("installation %s: the cache holds %q, Pebble %q", oid, got, want)
		}
	}
	for bucket := range 4 {
		for _, ch := range []string{"", "a", "b"} {
			p := bucketPrefix(nil, "app", bucket)
			if ch != "" {
				p = channelPrefix(nil, "app", ch, bucket)
			}
			err := s.iterate(p, prefixEnd(p), func(k, _ []byte) error {
				_, oid, err := store.DecodeCursor(k[len(p):])
				if err != nil {
					return err
				}
				st, err := s.readInst("app", oid)
				if err != nil {
					return fmt.Errorf("index row %q of installation %s: %w", k, oid, err)
				}
				if st.bucket != bucket || (ch != "" && !slices.Contains(st.inst.Channels, ch)) {
					return fmt.Errorf("index row %q left behind: installation %s is in bucket %d, channels %q", k, oid, st.bucket, st.inst.Channels)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// instIn is instAt with channels.
func instIn(oid, iid string, updated time.Time, channels ...string) push.Installation {
	inst := instAt(oid, iid, updated)
	inst.Channels = channels
	return inst
}

// TestStoreInstallationCacheFollowsEveryWriter: reads are served from the cache once filled; a
// put and a badge increment leave the primary row they wrote in the cache (under the stripes),
// and each other writer of primary rows (delete, sweep, seed, import) makes the store forget
// what it changed. After every step the cache agrees with Pebble.
func TestStoreInstallationCacheFollowsEveryWriter(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	cached := func(oid string) bool {
		_, _, ok := s.insts.get(instKey(nil, "app", oid))
		return ok
	}
	now := time.Now()
	if err := s.PutInstallation(ctx, "app", 4, instIn("o1", "iid1", now, "a")); err != nil {
		t.Fatal(err)
	}
	if !cached("o1") {
		t.Fatal("the put did not leave o1 in the cache")
	}
	instCacheAgrees(t, s, "o1")
	// A read that misses fills the cache.
	s.insts.clear()
	if inst, err := s.GetInstallation(ctx, "app", "o1"); err != nil || inst.InstallationID != "iid1" || !slices.Equal(inst.Channels, []string{"a"}) {
		t.Fatalf("GetInstallation = %+v, %v", inst, err)
	}
	if !cached("o1") {
		t.Fatal("a read did not fill the cache")
	}
	// An update that changes channels reads the route from the cache: the old channel's row goes.
	if err := s.PutInstallation(ctx, "app", 4, instIn("o1", "iid1", now.Add(time.Second), "b")); err != nil {
		t.Fatal(err)
	}
	instCacheAgrees(t, s, "o1")
	if inst, err := s.GetInstallation(ctx, "app", "o1"); err != nil || !slices.Equal(inst.Channels, []string{"b"}) {
		t.Fatalf("after the update GetInstallation = %+v, %v", inst, err)
	}
	// A badge increment rewrites the document.
	badges := make([]int64, 1)
	if err := s.IncrementBadges(ctx, "app", 4, "push1", []string{"o1"}, badges); err != nil || badges[0] != 1 {
		t.Fatalf("IncrementBadges = %v, %v", badges, err)
	}
	instCacheAgrees(t, s, "o1")
	if inst, err := s.GetInstallation(ctx, "app", "o1"); err != nil || push.NextBadge(inst.Doc) != 2 {
		t.Fatalf("after the increment GetInstallation = %s, %v; want badge 1", inst.Doc, err)
	}
	// Delete.
	if err := s.DeleteInstallation(ctx, "app", 4, "o1"); err != nil {
		t.Fatal(err)
	}
	instCacheAgrees(t, s, "o1")
	if _, err := s.GetInstallation(ctx, "app", "o1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the delete GetInstallation: %v", err)
	}
	// Seed, read (cached), then sweep.
	old := now.Add(-200 * 24 * time.Hour)
	if err := s.SeedInstallations("app", 4, []push.Installation{instIn("o2", "iid2", old, "a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetInstallation(ctx, "app", "o2"); err != nil || !cached("o2") {
		t.Fatalf("seeded o2: %v, cached %v", err, cached("o2"))
	}
	if n, err := s.DeleteInactive(ctx, "app", 4, now.Add(-push.InactiveAfter), 10); err != nil || n != 1 {
		t.Fatalf("DeleteInactive = %d, %v; want 1", n, err)
	}
	instCacheAgrees(t, s, "o2")
	if _, err := s.GetInstallation(ctx, "app", "o2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after the sweep GetInstallation: %v", err)
	}
	// Import over a cached installation: a newer version replaces it, channels and all.
	if err := s.PutInstallation(ctx, "app", 4, instIn("o3", "iid3", now, "a")); err != nil {
		t.Fatal(err)
	}
	out, by := make([]store.ImportOutcome, 1), make([]string, 1)
	if err := s.ImportInstallations(ctx, "app", 4, []push.Installation{instIn("o3", "iid3", now.Add(time.Minute), "b")}, out, by); err != nil || out[0] != store.ImportStored {
		t.Fatalf("ImportInstallations = %v, %v", out, err)
	}
	instCacheAgrees(t, s, "o3")
	if inst, err := s.GetInstallation(ctx, "app", "o3"); err != nil || !slices.Equal(inst.Channels, []string{"b"}) {
		t.Fatalf("after the import GetInstallation = %+v, %v", inst, err)
	}
	// And a put after it reads the imported route: the channel row of "b" goes with it.
	if err := s.PutInstallation(ctx, "app", 4, instIn("o3", "iid3", now.Add(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	instCacheAgrees(t, s, "o3")
}

// TestStoreInstallationCacheUnderConcurrentWriters puts installations with changing channels
// and device ids, increments their badges, deletes and imports them, and reads them, all at
// once; afterwards the cache agrees with Pebble and no index row is left behind. Run under the
// race detector by make test.
func TestStoreInstallationCacheUnderConcurrentWriters(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	const ids, objs, workers, rounds = 8, 6, 6, 300
	chans := [][]string{nil, {"a"}, {"b"}, {"a", "b"}}
	concurrently(t, workers, rounds, 2, func(rng *rand.Rand, w, r int) error {
		inst := func() push.Installation {
			return instIn(fmt.Sprintf("o%d", rng.IntN(objs)), fmt.Sprintf("iid%d", rng.IntN(ids)), time.Now(), chans[rng.IntN(len(chans))]...)
		}
		oid := fmt.Sprintf("o%d", rng.IntN(objs))
		switch rng.IntN(10) {
		case 0:
			return s.DeleteInstallation(ctx, "app", 4, oid)
		case 1, 2, 3:
			return s.PutInstallation(ctx, "app", 4, inst())
		case 4:
			return s.IncrementBadges(ctx, "app", 4, fmt.Sprintf("p%d-%d", w, r), []string{oid}, make([]int64, 1))
		case 5:
			out, by := make([]store.ImportOutcome, 1), make([]string, 1)
			return s.ImportInstallations(ctx, "app", 4, []push.Installation{inst()}, out, by)
		default:
			_, err := s.GetInstallation(ctx, "app", oid)
			return err
		}
	})
	oids := make([]string, objs)
	for i := range oids {
		oids[i] = fmt.Sprintf("o%d", i)
	}
	instCacheAgrees(t, s, oids...)
}

// concurrently runs op rounds times in each of workers goroutines at once (w the worker, r the
// round, rng seeded by the worker and seed), and fails t on any error but store.ErrNotFound
// and store.ErrDuplicate, which racing writers may meet.
func concurrently(t *testing.T, workers, rounds int, seed uint64, op func(rng *rand.Rand, w, r int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), seed))
			for r := range rounds {
				if err := op(rng, w, r); err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrDuplicate) {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

// pebbleValue is key's value in Pebble, read past the caches, or nil when it has none.
func pebbleValue(t *testing.T, s *Store, key []byte) []byte {
	t.Helper()
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return append([]byte(nil), v...)
}
