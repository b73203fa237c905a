package fanout

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
)

// busyIntake is an Intake whose answer the test sets.
type busyIntake struct{ busy atomic.Bool }

func (b *busyIntake) Busy() bool { return b.busy.Load() }

// holdFirstScan is the real store, whose first ScanBuckets call waits for hold to close once
// it has read a row: a task scanning (working, its token held) for as long as the test wants.
type holdFirstScan struct {
	*pebble.Store
	calls   atomic.Int32
	entered chan struct{}
	hold    chan struct{}
}

func (s *holdFirstScan) ScanBuckets(ctx context.Context, r store.ScanRange, hi int, fn func(bucket int, row *store.Row) error) error {
	first := s.calls.Add(1) == 1
	return s.Store.ScanBuckets(ctx, r, hi, func(bucket int, row *store.Row) error {
		if first {
			first = false
			close(s.entered)
			select {
			case <-s.hold:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return fn(bucket, row)
	})
}

// bySender sends each push's deliveries to its own recSender, and holds those of the pushes
// in held until the channel closes.
type bySender struct {
	mu      sync.Mutex
	recs    map[string]*recSender
	held    map[string]chan struct{}
	holding atomic.Int32 // calls being held
}

func (s *bySender) rec(oid string) *recSender {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recs[oid] == nil {
		s.recs[oid] = newRecSender()
	}
	return s.recs[oid]
}

func (s *bySender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	oid := ds[0].NotificationObjectID
	if h := s.held[oid]; h != nil {
		s.holding.Add(1)
		defer s.holding.Add(-1)
		select {
		case <-h:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.rec(oid).Send(ctx, ds, res)
}

func gateWorker(t *testing.T, e *env, st WorkerStore, snd Sender, in Intake) (*Worker, *metrics.Set) {
	t.Helper()
	ms := metrics.NewSet()
	w, err := NewWorker(DefaultWorkerConfig(), st, e.lg, snd, zap.NewNop(), ms)
	if err != nil {
		t.Fatal(err)
	}
	w.SetIntake(in)
	return w, ms
}

// oneTask plans a push to every installation of the app (64 buckets) as one task.
func oneTask(e *env) (push.Job, *push.Task) {
	pcfg := DefaultPlannerConfig()
	pcfg.BucketsPerTask = 64
	job, tasks := e.planDirect(push.Job{}, pcfg)
	if len(tasks) != 1 {
		e.t.Fatalf("%d tasks, want one", len(tasks))
	}
	return job, &tasks[0]
}

// runAsync runs t as the planner runs a task of one (RunInline) and returns its result. A
// test that fails early stops the task, and opens unblock, before the store closes.
func runAsync(tb testing.TB, w *Worker, t *push.Task, unblock chan struct{}) <-chan error {
	ctx, cancel := context.WithCancel(context.Background())
	done, res := make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(done)
		res <- w.RunInline(ctx, t, nil)
	}()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-unblock:
		default:
			close(unblock)
		}
		<-done
	})
	return res
}

// TestFanoutGivesWayToBusyIntake: while the API is busy, a second task waits for the one that
// is scanning (BusyTasks 1) and starts as soon as the API is idle, without waiting for the
// first to end; both pushes then deliver every target once.
func TestFanoutGivesWayToBusyIntake(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, 300)
	in := &busyIntake{}
	in.busy.Store(true)
	st := &holdFirstScan{Store: e.st, entered: make(chan struct{}), hold: make(chan struct{})}
	snd := &bySender{recs: map[string]*recSender{}}
	w, ms := gateWorker(t, e, st, snd, in)
	jobA, taskA := oneTask(e)
	jobB, taskB := oneTask(e)
	doneA := runAsync(t, w, taskA, st.hold)
	<-st.entered // A scans, holding the only token
	waits := ms.GetOrCreateCounter(`pushd_fanout_intake_waits_total`)
	before := waits.Get() // A's scan may have waited for A's own goroutine
	doneB := runAsync(t, w, taskB, make(chan struct{}))
	waitfor.True(t, 10*time.Second, "task B waiting for the busy API", func() bool { return waits.Get() == before+1 })
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("%d scans started while the API was busy and A held the token, want A's only", n)
	}
	in.busy.Store(false) // the API is idle: B runs beside A, without a token
	select {
	case err := <-doneB:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("task B did not run once the API was idle")
	}
	close(st.hold)
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	want := e.waitDone(jobA.NotificationObjectID).Counts.Total()
	for _, job := range []push.Job{jobA, jobB} {
		got := e.waitDone(job.NotificationObjectID).Counts.Total()
		rec := snd.rec(job.NotificationObjectID)
		if !got.Equal(want) || rec.count() != rec.distinct() || int64(rec.count()) != got.Sent {
			t.Errorf("push %s: counts %+v, %d deliveries to %d targets; want %+v, each once", job.ID, got, rec.count(), rec.distinct(), want)
		}
	}
	if want.Sent == 0 {
		t.Fatal("the pushes sent nothing")
	}
}

// TestFanoutTaskWaitingOnGatewayHoldsNoToken: a task whose batches all wait on a gateway gives
// its token back, so another task runs to its end while the API stays busy.
func TestFanoutTaskWaitingOnGatewayHoldsNoToken(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, 1500) // more targets than A's batches (queued, filling, at the sender) hold
	in := &busyIntake{}
	in.busy.Store(true)
	jobA, taskA := oneTask(e)
	jobB, taskB := oneTask(e)
	release := make(chan struct{})
	snd := &bySender{recs: map[string]*recSender{}, held: map[string]chan struct{}{jobA.NotificationObjectID: release}}
	w, _ := gateWorker(t, e, e.st, snd, in)
	doneA := runAsync(t, w, taskA, release)
	waitfor.True(t, 10*time.Second, "task A's batches at the gateway", func() bool {
		return snd.holding.Load() == int32(DefaultWorkerConfig().SendAhead)
	})
	select {
	case err := <-runAsync(t, w, taskB, make(chan struct{})):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("task B waited while A's batches all waited on the gateway")
	}
	if n := e.record(jobB.NotificationObjectID); n.Status != push.StatusDone {
		t.Fatalf("push B is %s while A waits on its gateway, want done", n.Status)
	}
	select {
	case err := <-doneA:
		t.Fatalf("task A ended (%v) while its gateway held every batch", err)
	default:
	}
	close(release)
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	a, b := e.waitDone(jobA.NotificationObjectID).Counts.Total(), e.record(jobB.NotificationObjectID).Counts.Total()
	if !a.Equal(b) || a.Sent == 0 {
		t.Fatalf("counts %+v and %+v, want the same, not zero", a, b)
	}
	for _, job := range []push.Job{jobA, jobB} {
		rec := snd.rec(job.NotificationObjectID)
		if rec.count() != rec.distinct() || int64(rec.count()) != a.Sent {
			t.Errorf("push %s: %d deliveries to %d targets, want %d once each", job.ID, rec.count(), rec.distinct(), a.Sent)
		}
	}
}

// TestFanoutPlannerGivesWayToBusyIntake: planning a job is fan-out's work too: while the API is
// busy and another holds the only token, the job stays unplanned; once the token is free the
// planner plans it and runs its task.
func TestFanoutPlannerGivesWayToBusyIntake(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, 300)
	in := &busyIntake{}
	in.busy.Store(true)
	snd := newRecSender()
	w, ms := gateWorker(t, e, e.st, snd, in)
	p, err := NewPlanner(DefaultPlannerConfig(), e.st, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	p.SetRunner(w)
	other := &gateHold{g: w.gate} // another task of fan-out works
	if err := other.enter(context.Background()); err != nil || !other.token {
		t.Fatalf("the first hold got no token: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); other.leave(); <-done })
	waits := ms.GetOrCreateCounter(`pushd_fanout_intake_waits_total`)
	job := e.submit(push.Job{})
	waitfor.True(t, 10*time.Second, "the planner waiting for the busy API", func() bool { return waits.Get() == 1 })
	if n := e.record(job.NotificationObjectID); n.Status != push.StatusInQueue {
		t.Fatalf("push is %s while the planner waits for a token, want %s", n.Status, push.StatusInQueue)
	}
	other.leave()
	n := e.waitDone(job.NotificationObjectID)
	if sent := n.Counts.Total().Sent; sent == 0 || int64(snd.count()) != sent || snd.count() != snd.distinct() {
		t.Fatalf("%d sent, %d deliveries to %d targets; want each target once", sent, snd.count(), snd.distinct())
	}
}
