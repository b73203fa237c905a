package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/store/pebble"
)

// cutAfterRecord is the real store, taking a crash clone of the store's file system (and of
// the log's, when the log is in another database) right after each update of a push record:
// what a power cut at that moment would leave, the synced data and, at random, some of the
// rest. The planner's plan and the worker's completion are such updates.
type cutAfterRecord struct {
	*pebble.Store
	mem, logMem *vfs.MemFS // logMem nil: the log is in the store's Pebble
	rng         *rand.Rand
	pushes      func() []string // the record ids of the pushes submitted so far

	mu   sync.Mutex
	cuts []powerCut
}

// powerCut is the state of the file systems at one cut, with the pushes submitted before it
// and which of them the live store had planned (its record past in-queue) right before it.
type powerCut struct {
	mem, logMem *vfs.MemFS
	pushes      int
	planned     []bool
}

// cut takes a clone; every other one keeps some of the unsynced data too, unless synced.
func (s *cutAfterRecord) cut(synced bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: 0}
	if len(s.cuts)%2 == 1 && !synced {
		cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: s.rng}
	}
	// The pushes before the clone: one submitted while it is taken may have no record in it.
	// Their live statuses are read before it too: a plan made in between counts as not made.
	ids := s.pushes()
	c := powerCut{pushes: len(ids), planned: make([]bool, len(ids))}
	for i, id := range ids {
		n, err := s.Store.GetNotification(context.Background(), testApp, id)
		c.planned[i] = err == nil && n.Status != push.StatusInQueue
	}
	c.mem = s.mem.CrashClone(cfg)
	if s.logMem != nil {
		c.logMem = s.logMem.CrashClone(cfg)
	}
	s.cuts = append(s.cuts, c)
}

func (s *cutAfterRecord) ChangeNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error, sync bool) error {
	err := s.Store.ChangeNotification(ctx, appID, objectID, fn, sync)
	s.cut(false)
	return err
}

func (s *cutAfterRecord) UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error) {
	n, err := s.Store.UpdateNotification(ctx, appID, objectID, fn)
	s.cut(false)
	return n, err
}

func (s *cutAfterRecord) UpdateNotificationNoSync(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error) {
	n, err := s.Store.UpdateNotificationNoSync(ctx, appID, objectID, fn)
	s.cut(false)
	return n, err
}

// planRoles runs a planner told that the log syncs the store (SetLogSyncsStore) and one worker
// that runs its single tasks and the tasks it appends, until the test ends or stop is called:
// stop returns once both have stopped, their consumers' offsets committed and synced.
func planRoles(t *testing.T, st interface {
	PlannerStore
	WorkerStore
}, lg *embedded.Log, snd Sender) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g, ctx := errgroup.WithContext(ctx)
	cfg := DefaultPlannerConfig()
	cfg.IDsPerTask = 2 // a device push of 5 ids is 3 tasks, appended
	p, err := NewPlanner(cfg, st, lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	p.SetLogSyncsStore()
	w, err := NewWorker(DefaultWorkerConfig(), st, lg, snd, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	p.SetRunner(w)
	g.Go(func() error { return w.Run(ctx) })
	g.Go(func() error { return p.Run(ctx) })
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// planSyncPushes are the pushes of the power-cut test: one task run in the planner (every
// seeded installation), three tasks appended (a device list), and no task at all (a channel
// nobody is in), submitted last so that no later write of the store syncs its plan.
var planSyncPushes = []push.Job{
	{Where: json.RawMessage(`{}`)},
	{Kind: push.JobDevices, DeviceType: push.DeviceIOS, DeviceIDs: []string{"tok1", "tok2", "tok3", "tok4", "tok5"}},
	{Where: json.RawMessage(`{"channels":"nobody"}`)},
}

// runPlanSync submits pushes, one after the other, to a store on a crashable file system whose planner
// records its plans without an fsync of their own (SetLogSyncsStore), with the log in the
// store's Pebble or (sameDB false) in another one, cutting the power after every record update
// and once more when all is quiet. It returns the cuts and the pushes' record ids.
func runPlanSync(t *testing.T, sameDB bool, pushes []push.Job) ([]powerCut, []string) {
	mem := vfs.NewCrashableMem()
	e := &env{t: t, dir: "/db", fs: mem}
	e.open()
	defer e.close()
	e.createApp(64, nil)
	e.seed(64, 30)
	lg, logMem := e.lg, (*vfs.MemFS)(nil)
	if !sameDB {
		logMem = vfs.NewCrashableMem()
		var err error
		lg, err = openLogIn(t, logMem)
		if err != nil {
			t.Fatal(err)
		}
		defer lg.Close()
	}
	var ids []string
	var smu sync.Mutex
	cs := &cutAfterRecord{Store: e.st, mem: mem, logMem: logMem, rng: rand.New(rand.NewPCG(1, 2)),
		pushes: func() []string { smu.Lock(); defer smu.Unlock(); return slices.Clone(ids) }}
	stop := planRoles(t, cs, lg, newRecSender())
	for _, j := range pushes {
		smu.Lock()
		job := e.submitTo(lg, j)
		ids = append(ids, job.NotificationObjectID)
		smu.Unlock()
		e.waitDone(job.NotificationObjectID)
	}
	// Quiet: every plan made; the roles stopped, so every consumer's offset is committed and
	// synced (its goroutine does it on the way out). Only the synced data kept.
	stop()
	cs.cut(true)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.cuts, cs.pushes()
}

// openLogIn opens an embedded log in a Pebble database of its own on mem.
func openLogIn(t *testing.T, mem *vfs.MemFS) (*embedded.Log, error) {
	t.Helper()
	db, err := pebble.Open("/log", pebble.Options{FS: mem})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = db.Close() })
	return embedded.Open(db.DB(), embedded.Options{Partitions: testParts, TrimInterval: -1})
}

// afterCut restarts on the state a power cut left, with the same roles, and reports each push's
// status as the cut left it and once the log has handed everything it kept: a push submitted
// after all of them (the marker, on the same partition) is done.
func afterCut(t *testing.T, c powerCut, ids []string) (left, got []string) {
	e := &env{t: t, dir: "/db", fs: c.mem}
	e.open()
	defer e.close()
	for i, id := range ids[:c.pushes] {
		n, err := e.st.GetNotification(context.Background(), testApp, id)
		if err != nil {
			t.Fatalf("push %d (%s) after the cut: %v; its record was synced before its job", i, id, err)
		}
		left = append(left, n.Status)
	}
	lg := e.lg
	if c.logMem != nil {
		var err error
		if lg, err = openLogIn(t, c.logMem); err != nil {
			t.Fatal(err)
		}
		defer lg.Close()
	}
	planRoles(t, e.st, lg, newRecSender())
	marker := e.submitTo(lg, push.Job{Where: json.RawMessage(`{"channels":"marker"}`)})
	e.waitDone(marker.NotificationObjectID)
	for i, id := range ids[:c.pushes] {
		n, err := e.st.GetNotification(context.Background(), testApp, id)
		if err != nil {
			t.Fatalf("push %d (%s) after the restart: %v", i, id, err)
		}
		if n.Status != push.StatusDone && n.Status != push.StatusInQueue {
			n = e.waitDone(id) // its tasks may still run (the marker does not wait for them)
		}
		got = append(got, n.Status)
	}
	return left, got
}

// With the embedded log in the store's own Pebble, the planner records every plan without an
// fsync of its own (SetLogSyncsStore): the tasks' synced append, the synced writes of the task
// it runs itself, or the consumer's synced offset commit makes the plan durable, as the one WAL
// keeps its writes in order. A power cut right after any plan or completion (only the synced
// data kept, or some of the rest too) and another once all is quiet never leave a push behind:
// after the restart, each is done, planned again when its plan was lost.
//
// The control runs the same pushes with the log in another database, where the offset commit
// syncs nothing of the store: the push planned no task is lost there at the last cut, which
// shows what the test catches (and why internal/node sets SetLogSyncsStore for that wiring
// only).
func TestFanoutPlannerPowerCutKeepsEveryPlan(t *testing.T) {
	cuts, ids := runPlanSync(t, true, planSyncPushes)
	if len(cuts) < 2*len(planSyncPushes) {
		t.Fatalf("%d cuts, want one after each push's plan and completion at least", len(cuts))
	}
	// Pushes the live store had planned before a cut that the cut left in the queue: plans not
	// yet synced. The first push's plan (its task runs in the planner) is never synced on its
	// own, with or without SetLogSyncsStore; the others' are, without it.
	lost := 0
	for i, c := range cuts {
		left, got := afterCut(t, c, ids)
		for j, s := range got {
			if s != push.StatusDone {
				t.Errorf("cut %d of %d (%d pushes submitted): push %d is %s after the restart, want done", i+1, len(cuts), c.pushes, j, s)
			}
			if j > 0 && c.planned[j] && left[j] == push.StatusInQueue {
				lost++
			}
		}
	}
	if lost == 0 {
		t.Error("no cut lost the plan of a push with appended tasks or none: the cuts never fell between such a plan and the write that syncs it")
	}
	t.Logf("%d cuts, %d plans lost and made again", len(cuts), lost)

	t.Run("control: log in another database", func(t *testing.T) {
		// The push planned no task alone: no task's synced write of the store follows its plan.
		cuts, ids := runPlanSync(t, false, planSyncPushes[len(planSyncPushes)-1:])
		_, last := afterCut(t, cuts[len(cuts)-1], ids)
		if s := last[len(last)-1]; s != push.StatusInQueue {
			t.Errorf("the push planned no task is %s after the last cut, want lost in the queue (%s): the test cannot see a plan lost", s, push.StatusInQueue)
		}
	})
}
