package migrate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/scansim"
)

func startSim(t *testing.T, cfg scansim.Config) *scansim.Server {
	t.Helper()
	cfg.AppID, cfg.MasterKey = "origApp0123456789abcdefg", "origMasterKey0123456789a"
	s, err := scansim.Start("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// recordSleeps stands for the backoff's waits: it records them and returns at once.
type recordSleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recordSleeps) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

func pullConfig(s *scansim.Server, sl *recordSleeps) PullConfig {
	return PullConfig{URL: s.URL(), AppID: "origApp0123456789abcdefg", MasterKey: "origMasterKey0123456789a", PageSize: 300, sleep: sl.sleep, flushRows: 1000}
}

// TestMigratePullStoresEveryValidRow: a walk with 429s and replies cut mid-body retries (the
// 429s after their Retry-After), uses the largest page the original allows, and ends with
// exactly the valid rows stored, each keeping objectId, dates, pointer, Date, ACL.
func TestMigratePullStoresEveryValidRow(t *testing.T) {
	cfg := scansim.Config{Rows: 3000, BadEvery: 100, Throttle: 4, CutAt: []int{2, 5}}
	s := startSim(t, cfg)
	st, app := openApp(t)
	l := NewLoader(st, app)
	sl := &recordSleeps{}
	pc := pullConfig(s, sl)
	pc.PageSize = 0 // the default: the original's largest page
	var ps PullState
	saves := 0
	if err := Pull(context.Background(), pc, l, &ps, func(PullState) error { saves++; return nil }, nil); err != nil {
		t.Fatalf("Pull: %v", err)
	}
	checkRows(t, stored(t, st, app), &cfg, s.Row)
	rep := l.Report()
	if rep.Refused != 30 || rep.Rows != 3000 || rep.Stored != 2970 {
		t.Errorf("report %+v, want 3000 rows, 2970 stored, 30 refused", *rep)
	}
	if rep.Refusals[0].ObjectID != scansim.ObjectID(99) || rep.Refusals[0].Code != 114 {
		t.Errorf("first refusal %+v, want row %s refused with code 114 (invalid token)", rep.Refusals[0], scansim.ObjectID(99))
	}
	stats := s.Stats()
	if stats.Throttled == 0 || stats.Cuts != 2 || stats.MaxLimit != scansim.MaxLimit {
		t.Errorf("simulator saw %+v: want 429s, 2 cut replies and pages of %d", stats, scansim.MaxLimit)
	}
	oneSecond := 0
	for _, w := range sl.waits {
		if w == time.Second {
			oneSecond++
		}
	}
	if oneSecond != int(stats.Throttled) {
		t.Errorf("waited Retry-After (1s) %d times for %d 429s (waits %v)", oneSecond, stats.Throttled, sl.waits)
	}
	if ps.Cursor != "" || saves == 0 {
		t.Errorf("after the walk: cursor %q and %d saves, want no cursor and saves", ps.Cursor, saves)
	}
}

// TestMigratePullResumesFromSavedCursor: a pull stopped after its second durable write resumes
// from the saved cursor (it does not walk again from the start) and ends with the valid rows.
func TestMigratePullResumesFromSavedCursor(t *testing.T) {
	cfg := scansim.Config{Rows: 5000, BadEvery: 50}
	s := startSim(t, cfg)
	st, app := openApp(t)
	sl := &recordSleeps{}
	pc := pullConfig(s, sl)
	pc.PageSize = 1000

	ctx, cancel := context.WithCancel(context.Background())
	var saved PullState
	n := 0
	err := Pull(ctx, pc, NewLoader(st, app), &PullState{}, func(p PullState) error {
		saved, n = p, n+1
		if n == 1 {
			cancel() // a kill after the first durable write
		}
		return nil
	}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first pull: %v, want it cancelled", err)
	}
	if saved.Cursor == "" || saved.Rows == 0 || saved.Rows >= cfg.Rows {
		t.Fatalf("saved state %+v: want a cursor mid-walk", saved)
	}
	if !saved.Matches(&pc) {
		t.Fatalf("saved state %+v does not match its own config", saved)
	}
	before, left := s.Stats().Requests, cfg.Rows-saved.Rows
	l := NewLoader(st, app)
	if err := Pull(context.Background(), pc, l, &saved, func(PullState) error { return nil }, nil); err != nil {
		t.Fatalf("resumed pull: %v", err)
	}
	pages := s.Stats().Requests - before
	if want := int64((left + 999) / 1000); pages != want {
		t.Errorf("the resumed pull asked for %d pages, want the %d left", pages, want)
	}
	checkRows(t, stored(t, st, app), &cfg, s.Row)
}

// TestMigratePullExpiredCursorWalksAgain: a cursor older than the original keeps one is
// refused; the pull walks again from the start and still ends with the valid rows.
func TestMigratePullExpiredCursorWalksAgain(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cfg := scansim.Config{Rows: 5000, BadEvery: 7, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}
	s := startSim(t, cfg)
	st, app := openApp(t)
	pc := pullConfig(s, &recordSleeps{})
	pc.PageSize = 1000
	ctx, cancel := context.WithCancel(context.Background())
	var saved PullState
	_ = Pull(ctx, pc, NewLoader(st, app), &PullState{}, func(p PullState) error {
		if saved.Cursor == "" {
			saved = p
		}
		cancel()
		return nil
	}, nil)
	if saved.Cursor == "" {
		t.Fatal("no cursor saved")
	}
	mu.Lock()
	now = now.Add(11 * time.Minute)
	mu.Unlock()
	if err := Pull(context.Background(), pc, NewLoader(st, app), &saved, func(PullState) error { return nil }, nil); err != nil {
		t.Fatalf("pull after the cursor expired: %v", err)
	}
	checkRows(t, stored(t, st, app), &cfg, s.Row)
}

// TestMigratePullSince: a second pull with --since walks only the rows updated after it, and
// their new versions replace the stored ones.
func TestMigratePullSince(t *testing.T) {
	cfg := scansim.Config{Rows: 2000}
	s := startSim(t, cfg)
	st, app := openApp(t)
	pc := pullConfig(s, &recordSleeps{})
	if err := Pull(context.Background(), pc, NewLoader(st, app), &PullState{}, func(PullState) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	cut := time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC)
	for _, i := range []int{3, 500, 1999} {
		s.Touch(i, cut.Add(time.Duration(i)*time.Second))
	}
	pc.Since = cut
	if n, err := Count(context.Background(), pc); err != nil || n != 3 {
		t.Fatalf("Count since the cut: %d, %v; want 3", n, err)
	}
	l := NewLoader(st, app)
	if err := Pull(context.Background(), pc, l, &PullState{}, func(PullState) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if rep := l.Report(); rep.Rows != 3 || rep.Stored != 3 {
		t.Errorf("since pull: %+v, want 3 rows read and stored", *rep)
	}
	checkRows(t, stored(t, st, app), &cfg, s.Row)
}

// TestMigratePullBadKeyFailsAtOnce: a refused master key is not retried.
func TestMigratePullBadKeyFailsAtOnce(t *testing.T) {
	s := startSim(t, scansim.Config{Rows: 10})
	st, app := openApp(t)
	sl := &recordSleeps{}
	pc := pullConfig(s, sl)
	pc.MasterKey = "wrong"
	err := Pull(context.Background(), pc, NewLoader(st, app), &PullState{}, func(PullState) error { return nil }, nil)
	if !errors.Is(err, ErrRejected) || len(sl.waits) != 0 {
		t.Fatalf("Pull with a wrong key: %v after %d waits, want ErrRejected at once", err, len(sl.waits))
	}
}
