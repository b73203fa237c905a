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

	"github.com/pushd/pushd/internal/lease"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
)

// countingLog counts, by job id, the jobs appended to push.jobs through it.
type countingLog struct {
	Log
	mu   *sync.Mutex
	jobs map[string]int
}

func (l countingLog) Append(ctx context.Context, topic string, recs ...queue.Record) error {
	if err := l.Log.Append(ctx, topic, recs...); err != nil {
		return err
	}
	if topic != queue.TopicJobs {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		var j push.Job
		if err := json.Unmarshal(r.Value, &j); err != nil {
			return err
		}
		l.jobs[j.ID]++
	}
	return nil
}

// Two schedulers on one store and an injected clock. The holder of the lease pauses in the
// middle of a firing; its lease runs out and the other node takes it. When the old holder
// resumes it fires nothing, whether or not the new holder has fired that push yet, and each
// due push is appended exactly once. The claim used to be fenced per push (a claim refused only
// when a later epoch had claimed that push), so the old holder resuming first fired the push
// under its lost lease, and one resuming after its claim appended the job a second time.
func TestSchedulerOldHolderResumingAfterTheLeaseMovedFiresNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// at is the hook of the old holder's scheduler where it pauses.
		at func(s *Scheduler, pause func(*push.Scheduled))
		// newFiresFirst: the new holder fires every due push while the old one is paused;
		// otherwise the old one resumes before the new holder's first tick.
		newFiresFirst bool
	}{
		{"before its claim, the new holder not yet firing", func(s *Scheduler, p func(*push.Scheduled)) { s.beforeClaim = p }, false},
		{"before its claim, the new holder having fired", func(s *Scheduler, p func(*push.Scheduled)) { s.beforeClaim = p }, true},
		{"after its claim, the new holder not yet firing", func(s *Scheduler, p func(*push.Scheduled)) { s.afterClaim = p }, false},
		{"after its claim, the new holder having fired", func(s *Scheduler, p func(*push.Scheduled)) { s.afterClaim = p }, true},
		{"after the record's write, the new holder not yet firing", func(s *Scheduler, p func(*push.Scheduled)) { s.beforeConfirm = p }, false},
		{"after the record's write, the new holder having fired", func(s *Scheduler, p func(*push.Scheduled)) { s.beforeConfirm = p }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, t.TempDir())
			ctx := context.Background()
			var due []push.Scheduled
			for range 3 {
				due = append(due, e.schedule(t, "app1", e.now.Add(-time.Minute)))
			}
			clock := func() time.Time { return e.now }
			jobs := countingLog{Log: e.log, mu: new(sync.Mutex), jobs: map[string]int{}}
			cfg := lease.Config{TTL: 15 * time.Second, Renew: 5 * time.Second}
			oldK := lease.New("scheduler", "old", cfg, e.st, zap.NewNop(), metrics.NewSet(), clock)
			newK := lease.New("scheduler", "new", cfg, e.st, zap.NewNop(), metrics.NewSet(), clock)
			oldK.Step(ctx)
			newK.Step(ctx)
			held, ok := oldK.Held()
			if !ok {
				t.Fatal("the first node did not take the free lease")
			}
			oldS := New(Config{}, e.st, jobs, oldK, zap.NewNop(), metrics.NewSet(), clock)
			newS := New(Config{}, e.st, jobs, newK, zap.NewNop(), metrics.NewSet(), clock)

			paused := 0
			tc.at(oldS, func(*push.Scheduled) {
				paused++
				if paused > 1 {
					t.Fatal("the old holder went on to a second push after its pause")
				}
				// The pause: the old holder's lease runs out, the other node takes it over.
				e.now = e.now.Add(cfg.TTL + time.Second)
				newK.Step(ctx)
				l, ok := newK.Held()
				if !ok || l.Epoch != held.Epoch+1 {
					t.Fatalf("the second node's lease after the pause = %+v, %v; want epoch %d", l, ok, held.Epoch+1)
				}
				if tc.newFiresFirst {
					if n, err := newS.Tick(ctx); err != nil || n != len(due) {
						t.Fatalf("the new holder fired %d (err %v), want %d", n, err, len(due))
					}
				}
			})
			n, err := oldS.Tick(ctx)
			if err != nil {
				t.Fatalf("the old holder's tick: %v", err)
			}
			if paused != 1 {
				t.Fatalf("the old holder paused %d times, want once", paused)
			}
			if n != 0 {
				t.Errorf("the old holder fired %d pushes after its lease moved, want 0", n)
			}
			if !tc.newFiresFirst {
				if n, err := newS.Tick(ctx); err != nil || n != len(due) {
					t.Fatalf("the new holder fired %d (err %v), want %d", n, err, len(due))
				}
			}
			if n, err := newS.Tick(ctx); err != nil || n != 0 {
				t.Fatalf("the new holder's next tick fired %d (err %v), want 0", n, err)
			}
			jobs.mu.Lock()
			defer jobs.mu.Unlock()
			for _, sp := range due {
				if got := jobs.jobs[sp.Job.ID]; got != 1 {
					t.Errorf("job %s appended %d times, want once", sp.Job.ID, got)
				}
				if _, err := e.st.GetScheduled(ctx, "app1", sp.ID); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("scheduled push %d still scheduled after firing: %v", sp.ID, err)
				}
				rec, err := e.st.GetNotification(ctx, "app1", sp.Job.NotificationObjectID)
				if err != nil || rec.Status != push.StatusInQueue || rec.PendingJob == nil || rec.PendingJob.ID != sp.Job.ID {
					t.Errorf("record of scheduled push %d: %+v, %v; want in-queue holding its job", sp.ID, rec, err)
				}
			}
			if len(jobs.jobs) != len(due) {
				t.Errorf("appended jobs %v, want the %d due ones", jobs.jobs, len(due))
			}
		})
	}
}
