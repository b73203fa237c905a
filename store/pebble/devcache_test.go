package pebble

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// TestDevCacheFillAfterForget: a value read before a change must not be cached after the
// change forgot the key, even though the reader missed before it.
func TestDevCacheFillAfterForget(t *testing.T) {
	c := newDevCache(1024)
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
	c.fill(key, "fresh", gen)
	if oid, _, ok := c.get(key); !ok || oid != "fresh" {
		t.Fatalf("fill after a clean miss: %q, %v", oid, ok)
	}
	c.clear()
	if oid, _, ok := c.get(key); ok {
		t.Fatalf("cleared cache still holds %q", oid)
	}
}

func TestDevCacheBounded(t *testing.T) {
	c := newDevCache(256)
	for i := range 10000 {
		key := fmt.Appendf(nil, "key-%d", i)
		_, gen, _ := c.get(key)
		c.fill(key, "o", gen)
	}
	if n := c.len(); n > 256 || n < 128 {
		t.Fatalf("cache of 256 holds %d entries", n)
	}
	if newDevCache(0) != nil || newDevCache(-1) != nil {
		t.Fatal("a cache of no entries exists")
	}
}

// TestStoreDeviceCacheFollowsEveryWriter: lookups are served from the cache once filled; a put
// leaves the device rows it wrote in the cache (under their stripes), and each other writer of
// device rows (delete, sweep, seed) makes the store forget what it changed.
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
			if oid, ok := cached(iid); ok {
				t.Fatalf("absent %s cached as %q", iid, oid)
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
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range rounds {
				oid := fmt.Sprintf("o%d", rng.IntN(objs))
				var err error
				switch rng.IntN(8) {
				case 0:
					err = s.DeleteInstallation(ctx, "app", 4, oid)
				case 1, 2:
					err = s.PutInstallation(ctx, "app", 4, instAt(oid, iid(rng.IntN(ids)), time.Now()))
				default:
					_, err = s.LookupDevice(ctx, "app", push.KindIID, iid(rng.IntN(ids)))
				}
				if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrDuplicate) {
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
	// A stale entry would answer these lookups; a missing one is read from Pebble.
	for i := range ids {
		key := deviceKey(nil, "app", string(push.KindIID), iid(i))
		want, closer, err := s.db.Get(key)
		if err == nil {
			want = append([]byte(nil), want...)
			_ = closer.Close()
		} else if !errors.Is(err, pebble.ErrNotFound) {
			t.Fatal(err)
		}
		got, err := s.LookupDevice(ctx, "app", push.KindIID, iid(i))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("LookupDevice(%s) = %q, device row says %q", iid(i), got, want)
		}
	}
}

func TestStoreDeviceCacheOptions(t *testing.T) {
	s, err := Open(t.TempDir(), Options{DeviceCacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.devices != nil {
		t.Fatal("DeviceCacheEntries -1 made a cache")
	}
	ctx := context.Background()
	if err := s.PutInstallation(ctx, "app", 4, instAt("o1", "iid1", time.Now())); err != nil {
		t.Fatal(err)
	}
	if oid, err := s.LookupDevice(ctx, "app", push.KindIID, "iid1"); err != nil || oid != "o1" {
		t.Fatalf("LookupDevice without a cache = %q, %v", oid, err)
	}

	parse := func(args ...string) (Options, error) {
		var o Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		o.RegisterFlags(fs, "pebble-")
		return o, fs.Parse(args)
	}
	for _, tc := range []struct {
		args []string
		want int // what Open uses; 0 is none
	}{
		{nil, DefaultDeviceCacheEntries},
		{[]string{"--pebble-device-cache-entries", "0"}, 0},
		{[]string{"--pebble-device-cache-entries", "5000"}, 5000},
	} {
		o, err := parse(tc.args...)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if got := o.deviceCacheEntries(); got != tc.want {
			t.Errorf("%q: Open would use %d entries, want %d", tc.args, got, tc.want)
		}
	}
	for _, bad := range []string{"-1", "many"} {
		if _, err := parse("--pebble-device-cache-entries", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := (&Options{}).deviceCacheEntries(); got != DefaultDeviceCacheEntries {
		t.Errorf("zero Options: %d entries, want the default %d", got, DefaultDeviceCacheEntries)
	}
}
