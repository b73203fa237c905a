package pebble

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// openAndroidOnly opens a store holding benchApp's Android installations only (benchInst of
// i not a multiple of 3, i < n).
func openAndroidOnly(t *testing.T, n int) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{CacheSize: 8 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	for i := range n {
		if i%3 == 0 {
			continue
		}
		if err := s.PutInstallation(context.Background(), benchApp, benchBuckets, benchInst(i)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// scanCount scans benchApp's rows of device type dt (by channel ch) over every bucket.
func scanCount(t *testing.T, s *Store, ch, dt string) int {
	t.Helper()
	n := 0
	r := store.ScanRange{AppID: benchApp, Channel: ch, DeviceType: dt}
	if err := s.ScanBuckets(context.Background(), r, benchBuckets, func(int, *store.Row) error {
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func (s *Store) absenceHits() uint64 {
	s.absence.mu.Lock()
	defer s.absence.mu.Unlock()
	return s.absence.hits
}

// An iOS scan of an app with Android installations only is answered from memory the second
// time, by bucket and by channel; every writer of installations makes the next scan read the
// store again, and it finds the new row.
func TestStoreScanAbsenceRemembered(t *testing.T) {
	ctx := context.Background()
	ios := benchInst(3) // i%3 == 0: iOS
	if ios.DeviceType != push.DeviceIOS {
		t.Fatalf("benchInst(3) is %s", ios.DeviceType)
	}
	writers := map[string]func(s *Store) error{
		"put": func(s *Store) error { return s.PutInstallation(ctx, benchApp, benchBuckets, ios) },
		"import": func(s *Store) error {
			out, by := make([]store.ImportOutcome, 1), make([]string, 1)
			return s.ImportInstallations(ctx, benchApp, benchBuckets, []push.Installation{ios}, out, by)
		},
		"seed": func(s *Store) error {
			return s.SeedInstallations(benchApp, benchBuckets, []push.Installation{ios})
		},
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			s := openAndroidOnly(t, 90)
			for _, ch := range []string{"", "news"} {
				if n := scanCount(t, s, ch, push.DeviceIOS); n != 0 {
					t.Fatalf("channel %q: %d iOS rows, want 0", ch, n)
				}
				before := s.absenceHits()
				if n := scanCount(t, s, ch, push.DeviceIOS); n != 0 {
					t.Fatalf("channel %q again: %d iOS rows, want 0", ch, n)
				}
				if got := s.absenceHits(); got != before+1 {
					t.Fatalf("channel %q: the second empty scan was not answered from memory (hits %d → %d)", ch, before, got)
				}
			}
			if n := scanCount(t, s, "", push.DeviceAndroid); n != 60 {
				t.Fatalf("%d Android rows, want 60", n)
			}
			if err := write(s); err != nil {
				t.Fatal(err)
			}
			for _, ch := range []string{"", "news"} {
				if n := scanCount(t, s, ch, push.DeviceIOS); n != 1 {
					t.Fatalf("channel %q after the %s: %d iOS rows, want 1", ch, name, n)
				}
			}
		})
	}
}

// A scan that starts while a writer is between its batch and its commit may not remember an
// absence: the row becomes visible at the commit, after the scan's snapshot.
func TestStoreScanAbsenceWriterInFlight(t *testing.T) {
	s := openAndroidOnly(t, 90)
	ios := benchInst(3)
	w := s.absence.begin(benchApp) // as putInstallation does before building its batch
	if n := scanCount(t, s, "", push.DeviceIOS); n != 0 {
		t.Fatalf("%d iOS rows before the commit, want 0", n)
	}
	b := s.db.NewBatch()
	if err := setInstRows(w, b, benchApp, push.Bucket(ios.ObjectID, benchBuckets), &ios); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	w.end()
	if n := scanCount(t, s, "", push.DeviceIOS); n != 1 {
		t.Fatalf("%d iOS rows after the commit, want 1", n)
	}
}

// A scan whose snapshot was taken before a write that begins and commits while it runs may
// not remember an absence either.
func TestStoreScanAbsenceWriteDuringScan(t *testing.T) {
	s := openAndroidOnly(t, 90)
	ios := benchInst(3)
	once := true
	s.afterScanOpen = func() {
		if once {
			once = false
			if err := s.PutInstallation(context.Background(), benchApp, benchBuckets, ios); err != nil {
				t.Error(err)
			}
		}
	}
	if n := scanCount(t, s, "", push.DeviceIOS); n != 0 {
		t.Fatalf("%d iOS rows in the scan whose snapshot preceded the put, want 0", n)
	}
	if n := scanCount(t, s, "", push.DeviceIOS); n != 1 {
		t.Fatalf("%d iOS rows after the put, want 1", n)
	}
}

// Writers and scans at once: a scan that starts after a put returned sees its row.
func TestStoreScanAbsenceConcurrent(t *testing.T) {
	s := openAndroidOnly(t, 90)
	ctx := context.Background()
	const puts = 60
	var done atomic.Int64 // iOS puts returned
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for j := range puts {
			inst := benchInst(3 * (1000 + j))
			if err := s.PutInstallation(ctx, benchApp, benchBuckets, inst); err != nil {
				t.Error(err)
				return
			}
			done.Add(1)
			// Android writes in between too: other device types' rows change nothing.
			if err := s.PutInstallation(ctx, benchApp, benchBuckets, benchInst(1+3*j)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for scans := 0; done.Load() < puts; scans++ {
		want := done.Load()
		if n := scanCount(t, s, "", push.DeviceIOS); int64(n) < want {
			t.Fatalf("scan %d saw %d iOS rows after %d puts returned", scans, n, want)
		}
	}
	wg.Wait()
	if n := scanCount(t, s, "", push.DeviceIOS); n != puts {
		t.Fatalf("%d iOS rows at the end, want %d", n, puts)
	}
}

// Pruning drops only apps without a writer in: a scan that starts while a pruned writer's
// batch is uncommitted may not remember. Each app remembers a bounded number of scans.
func TestAbsencePruneAndBounds(t *testing.T) {
	var a absence
	k := absenceKey{deviceType: push.DeviceIOS, hi: 256}
	w := a.begin("busy")
	for i := range absenceAppsMax {
		a.look(fmt.Sprintf("app%d", i), k)
	}
	_, s := a.look("busy", k)
	a.remember(k, s)
	if known, _ := a.look("busy", k); known {
		t.Fatal("a scan that ran while a writer was in was remembered")
	}
	w.end()
	_, s = a.look("busy", k)
	a.remember(k, s)
	if known, _ := a.look("busy", k); !known {
		t.Fatal("a scan with no writer in was not remembered")
	}
	for i := range absenceScansMax + 1 {
		kk := absenceKey{deviceType: push.DeviceIOS, lo: i, hi: i + 1}
		_, s := a.look("many", kk)
		a.remember(kk, s)
	}
	if n := len(a.apps["many"].empty); n > absenceScansMax {
		t.Fatalf("%d scans remembered, over %d", n, absenceScansMax)
	}
}
