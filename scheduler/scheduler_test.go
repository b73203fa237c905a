package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/store"
	pstore "github.com/pushd/pushd/store/pebble"
)

type env struct {
	st  *pstore.Store
	log *embedded.Log
	now time.Time
}

func newEnv(t *testing.T, dir string) *env {
	t.Helper()
	st, err := pstore.Open(dir, pstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lg, err := embedded.Open(st.DB(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lg.Close(); _ = st.Close() })
	return &env{st: st, log: lg, now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
}

func (e *env) schedule(t *testing.T, appID string, due time.Time) push.Scheduled {
	t.Helper()
	ctx := context.Background()
	id, err := e.st.NextID(ctx, "scheduled")
	if err != nil {
		t.Fatal(err)
	}
	oid := "rec" + time.Duration(id).String()
	n := push.Notification{ObjectID: oid, AppID: appID, Status: push.StatusScheduled, CreatedAt: e.now, UpdatedAt: e.now, ScheduledID: id}
	if err := e.st.CreateNotification(ctx, n); err != nil {
		t.Fatal(err)
	}
	sp := push.Scheduled{ID: id, AppID: appID, DueAt: due, CreatedAt: e.now,
		Job: push.Job{ID: "job-" + oid, AppID: appID, NotificationObjectID: oid, Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"hi"}`)}}
	if err := e.st.PutScheduled(ctx, sp); err != nil {
		t.Fatal(err)
	}
	return sp
}

// jobs collects the job ids that reach push.jobs.
func (e *env) jobs(t *testing.T) (func() []push.Job, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var jobs []push.Job
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.log.Consume(ctx, queue.TopicJobs, "test", func(_ context.Context, m queue.Message) error {
			var j push.Job
			if err := json.Unmarshal(m.Value, &j); err != nil {
				t.Errorf("bad job: %v", err)
			}
			mu.Lock()
			jobs = append(jobs, j)
			mu.Unlock()
			return nil
		})
	}()
	return func() []push.Job {
			mu.Lock()
			defer mu.Unlock()
			return append([]push.Job(nil), jobs...)
		}, func() {
			cancel()
			<-done
		}
}

func TestSchedulerFiresDuePushOnce(t *testing.T) {
	e := newEnv(t, t.TempDir())
	ctx := context.Background()
	due := e.schedule(t, "app1", e.now.Add(2*time.Minute))
	later := e.schedule(t, "app1", e.now.Add(time.Hour))
	s := New(Config{}, e.st, e.log, e.sole(t), zap.NewNop(), metrics.NewSet(), func() time.Time { return e.now })

	if n, err := s.Tick(ctx); err != nil || n != 0 {
		t.Fatalf("before the due time: fired %d (err %v), want 0", n, err)
	}
	e.now = e.now.Add(3 * time.Minute)
	for i := 0; i < 3; i++ {
		n, err := s.Tick(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[i == 0]; n != want {
			t.Fatalf("tick %d fired %d, want %d", i, n, want)
		}
	}
	got, stop := e.jobs(t)
	defer stop()
	waitfor.True(t, 5*time.Second, "the fired job in push.jobs", func() bool { return len(got()) == 1 })
	fired := got()[0]
	if fired.ID != due.Job.ID {
		t.Fatalf("fired job %q, want %q", fired.ID, due.Job.ID)
	}
	// The where's relative times count from when the push fired, not from when it was accepted.
	if !fired.QueryAt.Equal(e.now) || !fired.CreatedAt.Equal(due.Job.CreatedAt) || !fired.QueryTime().Equal(e.now) {
		t.Fatalf("fired job queryAt %v createdAt %v, want %v and %v", fired.QueryAt, fired.CreatedAt, e.now, due.Job.CreatedAt)
	}
	rec, err := e.st.GetNotification(ctx, "app1", due.Job.NotificationObjectID)
	if err != nil || rec.Status != push.StatusInQueue {
		t.Fatalf("record after firing: status %q err %v, want in-queue", rec.Status, err)
	}
	if _, err := e.st.GetScheduled(ctx, "app1", due.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("fired push still listed: err %v", err)
	}
	if _, err := e.st.GetScheduled(ctx, "app1", later.ID); err != nil {
		t.Fatalf("push due later was touched: %v", err)
	}
}

func TestSchedulerDropsCancelledPush(t *testing.T) {
	e := newEnv(t, t.TempDir())
	ctx := context.Background()
	sp := e.schedule(t, "app1", e.now.Add(2*time.Minute))
	if err := e.st.DeleteNotification(ctx, "app1", sp.Job.NotificationObjectID); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(time.Hour)
	s := New(Config{}, e.st, e.log, e.sole(t), zap.NewNop(), metrics.NewSet(), func() time.Time { return e.now })
	if n, err := s.Tick(ctx); err != nil || n != 0 {
		t.Fatalf("cancelled push: fired %d (err %v), want 0", n, err)
	}
	if _, err := e.st.GetScheduled(ctx, "app1", sp.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancelled push still scheduled: %v", err)
	}
}

// failingDelete makes the first DeleteScheduled fail, as a crash right after the append would.
type failingDelete struct {
	*pstore.Store
	failed bool
}

func (f *failingDelete) DeleteScheduled(ctx context.Context, appID string, id int64) error {
	if !f.failed {
		f.failed = true
		return errors.New("disk went away")
	}
	return f.Store.DeleteScheduled(ctx, appID, id)
}

func TestSchedulerRefiresSameJobAfterCrashAndAfterDowntime(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, dir)
	ctx := context.Background()
	sp := e.schedule(t, "app1", e.now.Add(2*time.Minute))
	// The server was down past the due time: the first tick after start fires it.
	e.now = e.now.Add(24 * time.Hour)
	s := New(Config{}, &failingDelete{Store: e.st}, e.log, e.sole(t), zap.NewNop(), metrics.NewSet(), func() time.Time { return e.now })
	if _, err := s.Tick(ctx); err == nil {
		t.Fatal("tick with a failing delete reported no error")
	}
	// "Restart": the schedule is still there, so it fires again, with the same job id.
	s2 := New(Config{}, e.st, e.log, e.sole(t), zap.NewNop(), metrics.NewSet(), func() time.Time { return e.now })
	if n, err := s2.Tick(ctx); err != nil || n != 1 {
		t.Fatalf("after restart: fired %d (err %v), want 1", n, err)
	}
	got, stop := e.jobs(t)
	defer stop()
	waitfor.True(t, 5*time.Second, "two appends of the job", func() bool { return len(got()) == 2 })
	if jobs := got(); jobs[0].ID != sp.Job.ID || jobs[1].ID != sp.Job.ID {
		t.Fatalf("appended jobs %q and %q, want the same id %q twice (fan-out plans a job id once)", jobs[0].ID, jobs[1].ID, sp.Job.ID)
	}
}

// soleLease is the lease of a scheduler alone in its test: acquired in the store (the claims
// are fenced by it) until far in the future, and held throughout.
type soleLease struct{ l store.Lease }

func (s soleLease) Held() (store.Lease, bool) { return s.l, true }

func (e *env) sole(t *testing.T) soleLease {
	t.Helper()
	l, ok, err := e.st.AcquireLease(context.Background(), "scheduler", "test", e.now, 100*365*24*time.Hour)
	if err != nil || !ok {
		t.Fatalf("cannot acquire the sole scheduler lease: %v, %v", ok, err)
	}
	return soleLease{l}
}
