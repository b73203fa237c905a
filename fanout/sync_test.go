package fanout

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store/pebble"
)

// syncCountStore is the real store, noting which of a task's per-batch writes asked for their
// own fsync: the checkpoints (with the deliveries they count) and the daily-volume additions.
type syncCountStore struct {
	*pebble.Store

	mu             sync.Mutex
	syncedCounted  []int64 // targets counted by each synced checkpoint, in order
	unsyncedChecks int     // checkpoints written without an fsync (the final progress excluded)
	syncedVolume   int
	unsyncedVolume int
}

func counted(p push.TaskProgress) int64 {
	var n int64
	for _, c := range p.Counts {
		n += c.Targets
	}
	return n
}

func (s *syncCountStore) PutTaskProgress(ctx context.Context, p push.TaskProgress) error {
	s.mu.Lock()
	if !p.Done {
		s.syncedCounted = append(s.syncedCounted, counted(p))
	}
	s.mu.Unlock()
	return s.Store.PutTaskProgress(ctx, p)
}

func (s *syncCountStore) PutTaskProgressNoSync(ctx context.Context, p push.TaskProgress) error {
	s.mu.Lock()
	if !p.Done {
		s.unsyncedChecks++
	}
	s.mu.Unlock()
	return s.Store.PutTaskProgressNoSync(ctx, p)
}

func (s *syncCountStore) AddDailyVolume(ctx context.Context, appID, day string, n int64) (int64, error) {
	s.mu.Lock()
	s.syncedVolume++
	s.mu.Unlock()
	return s.Store.AddDailyVolume(ctx, appID, day, n)
}

func (s *syncCountStore) AddDailyVolumeNoSync(ctx context.Context, appID, day string, n int64) (int64, error) {
	s.mu.Lock()
	s.unsyncedVolume++
	s.mu.Unlock()
	return s.Store.AddDailyVolumeNoSync(ctx, appID, day, n)
}

// A task checkpoints after every batch but fsyncs a checkpoint only once the next batch could
// take the deliveries since the last synced one past SyncEvery, and reserves the daily volume
// without an fsync of its own; SyncEvery 0 syncs every one of those writes.
func TestFanoutSyncEveryBoundsUnsyncedDeliveries(t *testing.T) {
	const n = 2000
	e := newEnv(t)
	e.createApp(64, withVolume)
	e.seed(64, n)
	want := expected(t, n, `{}`)
	for _, syncEvery := range []int{0, 400, 250} { // 250: not a multiple of the batch
		t.Run(fmt.Sprintf("sync-every-%d", syncEvery), func(t *testing.T) {
			cfg := DefaultWorkerConfig()
			cfg.BatchSize = 100
			cfg.SendAhead = 1 // batches final in order: the checkpoints' counts step by 100
			cfg.SyncEvery = syncEvery
			st := &syncCountStore{Store: e.st}
			job, tasks := e.planDirect(push.Job{}, PlannerConfig{BucketsPerTask: 64, IDsPerTask: 1000})
			if len(tasks) != 1 {
				t.Fatalf("%d tasks, want 1", len(tasks))
			}
			w, err := NewWorker(cfg, st, e.lg, newRecSender(), zap.NewNop(), metrics.NewSet())
			if err != nil {
				t.Fatal(err)
			}
			if err := w.RunTask(context.Background(), &tasks[0]); err != nil {
				t.Fatal(err)
			}
			checkCounts(t, e.record(job.NotificationObjectID).Counts, countsOf(want))

			batches := (len(want) + cfg.BatchSize - 1) / cfg.BatchSize
			checks := len(st.syncedCounted) + st.unsyncedChecks
			if checks != batches-1 {
				t.Errorf("%d checkpoints, want %d (one after every batch but the last)", checks, batches-1)
			}
			prev := int64(0)
			for _, at := range st.syncedCounted {
				if syncEvery > 0 && at-prev > int64(syncEvery) {
					t.Errorf("synced checkpoints at %v targets: %d between two, more than %d", st.syncedCounted, at-prev, syncEvery)
				}
				prev = at
			}
			if syncEvery == 0 {
				if st.unsyncedChecks != 0 || st.unsyncedVolume != 0 || st.syncedVolume != batches {
					t.Errorf("sync every 0: %d unsynced checkpoints, %d unsynced and %d synced volume additions; want 0, 0, %d",
						st.unsyncedChecks, st.unsyncedVolume, st.syncedVolume, batches)
				}
				return
			}
			// Synced whenever the next batch could pass the bound: every
			// floor(syncEvery/batch) batches.
			per := syncEvery / cfg.BatchSize
			if wantSynced := (batches - 1) / per; len(st.syncedCounted) != wantSynced {
				t.Errorf("%d synced checkpoints (at %v targets), want %d", len(st.syncedCounted), st.syncedCounted, wantSynced)
			}
			if st.syncedVolume != 0 || st.unsyncedVolume != batches {
				t.Errorf("%d synced and %d unsynced volume additions, want 0 and %d", st.syncedVolume, st.unsyncedVolume, batches)
			}
		})
	}
}

// cutSender delivers (to rec: what reached the users survives the cut) until its cut-th call,
// then cuts the power: the state the store's file system would have now, only what was synced,
// goes to cut, and every call from then on fails without delivering, as the machine is down.
type cutSender struct {
	rec   *recSender
	mem   *vfs.MemFS
	at    int
	mu    sync.Mutex
	calls int
	clone *vfs.MemFS
}

// withVolume gives the test app a daily volume (createApp's default is none), so that tasks
// reserve it.
func withVolume(s *push.AppSettings) { s.DailyVolume = push.DefaultDailyVolume }

var errPowerCut = errors.New("power cut")

func (s *cutSender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clone != nil {
		return errPowerCut
	}
	s.calls++
	if err := s.rec.Send(ctx, ds, res); err != nil {
		return err
	}
	if s.calls == s.at {
		s.clone = s.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		return errPowerCut // delivered, but never answered
	}
	return nil
}

// A power cut mid-push (the store keeps only what was synced) loses the checkpoints and daily
// volume written without an fsync since the last synced checkpoint: the task resumes from that
// one, re-sends at most SyncEvery deliveries plus the batches in flight, counts every target
// once, and the day's volume counts every target at least once.
func TestFanoutPowerCutResumesWithinSyncEvery(t *testing.T) {
	const n = 3000
	for _, syncEvery := range []int{0, 200} {
		t.Run(fmt.Sprintf("sync-every-%d", syncEvery), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			e := &env{t: t, dir: "/db", fs: mem}
			e.open()
			e.createApp(64, withVolume)
			e.seed(64, n)
			cfg := DefaultWorkerConfig()
			cfg.BatchSize = 50
			cfg.SendAhead = 2
			cfg.SyncEvery = syncEvery
			job, tasks := e.planDirect(push.Job{}, PlannerConfig{BucketsPerTask: 64, IDsPerTask: 1000})
			rec := newRecSender()
			// The 23rd batch: a synced checkpoint was written after the 20th at the latest (sync
			// every 200 with batches of 50: after every 4th), unsynced ones after it.
			cut := &cutSender{rec: rec, mem: mem, at: 23}
			if err := e.worker(cfg, cut).RunTask(context.Background(), &tasks[0]); !errors.Is(err, errPowerCut) {
				t.Fatalf("task before the cut: %v, want the cut", err)
			}
			before := rec.count()
			e.close()

			after := &env{t: t, dir: "/db", fs: cut.clone}
			after.open()
			defer after.close()
			if err := after.worker(cfg, rec).RunTask(context.Background(), &tasks[0]); err != nil {
				t.Fatal(err)
			}
			want := expected(t, n, `{}`)
			dups, total := 0, 0
			for id := range want {
				c := rec.got[id]
				if c < 1 {
					t.Errorf("%s never delivered", id)
				}
				dups += c - 1
				total += c
			}
			bound := syncEvery + cfg.SendAhead*cfg.BatchSize
			if dups > bound {
				t.Errorf("%d duplicates after the cut, want at most %d (sync every %d, %d batches of %d in flight)",
					dups, bound, syncEvery, cfg.SendAhead, cfg.BatchSize)
			}
			if syncEvery > 0 && dups <= cfg.SendAhead*cfg.BatchSize {
				t.Errorf("%d duplicates: the cut lost no unsynced checkpoint (the 21st and 22nd batches'), the test proves nothing", dups)
			}
			t.Logf("%d targets, %d delivered before the cut, %d duplicates (bound %d)", len(want), before, dups, bound)
			r := after.record(job.NotificationObjectID)
			if r.Status != push.StatusDone {
				t.Errorf("status %s", r.Status)
			}
			checkCounts(t, r.Counts, countsOf(want))
			vol, err := after.st.DailyVolume(context.Background(), testApp, time.Now().UTC().Format(time.DateOnly))
			if err != nil {
				t.Fatal(err)
			}
			if vol < int64(len(want)) || vol > int64(total) {
				t.Errorf("daily volume %d after the cut, want between %d targets and %d deliveries", vol, len(want), total)
			}
		})
	}
}
