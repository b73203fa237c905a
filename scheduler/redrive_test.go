package scheduler

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
)

// pendingRecord writes what a crash between a push's record and its job's append leaves: an
// in-queue record holding its job, and no job in the log.
func (e *env) pendingRecord(t *testing.T, appID, oid string) {
	t.Helper()
	if err := e.st.CreateApp(context.Background(), push.App{ID: appID}); err != nil {
		t.Fatal(err)
	}
	job := push.Job{ID: oid, AppID: appID, NotificationObjectID: oid, Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"hi"}`), CreatedAt: e.now}
	n := push.Notification{ObjectID: oid, AppID: appID, Status: push.StatusInQueue, CreatedAt: e.now, UpdatedAt: e.now, PendingJob: &job, PendingBy: "a-dead-process"}
	if err := e.st.CreateNotification(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func TestRedriverAppendsALostJobOnceItIsOverdue(t *testing.T) {
	e := newEnv(t, t.TempDir())
	ctx := context.Background()
	e.pendingRecord(t, "app1", "rec1")
	r := NewRedriver(RedriveConfig{After: time.Minute}, e.st, e.log, nil, zap.NewNop(), metrics.NewSet(), func() time.Time { return e.now })
	got, stop := e.jobs(t)
	defer stop()

	if n, err := r.Tick(ctx); err != nil || n != 0 {
		t.Fatalf("before the bound: re-drove %d (err %v), want 0", n, err)
	}
	e.now = e.now.Add(time.Minute + time.Second)
	if n, err := r.Tick(ctx); err != nil || n != 1 {
		t.Fatalf("past the bound: re-drove %d (err %v), want 1", n, err)
	}
	waitfor.True(t, 5*time.Second, "the re-driven job in push.jobs", func() bool { return len(got()) == 1 })
	if j := got()[0]; j.ID != "rec1" || j.NotificationObjectID != "rec1" {
		t.Fatalf("re-drove job %+v, want the record's", j)
	}
	// Not taken yet (planner down): not appended again before the back-off ends.
	if n, err := r.Tick(ctx); err != nil || n != 0 {
		t.Fatalf("right after a re-drive: re-drove %d (err %v), want 0", n, err)
	}
	e.now = e.now.Add(time.Minute)
	if n, err := r.Tick(ctx); err != nil || n != 1 {
		t.Fatalf("after the back-off: re-drove %d (err %v), want 1", n, err)
	}
	// The planner takes it: nothing to re-drive any more.
	if _, err := e.st.UpdateNotification(ctx, "app1", "rec1", func(n *push.Notification) error {
		n.Status, n.PendingJob = push.StatusInProcess, nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(time.Hour)
	if n, err := r.Tick(ctx); err != nil || n != 0 {
		t.Fatalf("after the planner took the job: re-drove %d (err %v), want 0", n, err)
	}
}

// A crash after the firing's record write (scheduler/after-record): the next tick appends the
// job the record holds, with its first QueryAt. After the append (scheduler/after-job) with the
// job taken by the planner: the next tick only removes the schedule.
func TestSchedulerRefiresAfterACrashMidFiring(t *testing.T) {
	e := newEnv(t, t.TempDir())
	ctx := context.Background()
	sp := e.schedule(t, "app1", e.now.Add(time.Minute))
	oid := sp.Job.NotificationObjectID
	firstFire := e.now.Add(2 * time.Minute)
	// The state a kill at scheduler/after-record leaves.
	if _, err := e.st.UpdateNotification(ctx, "app1", oid, func(n *push.Notification) error {
		j := sp.Job
		j.QueryAt = firstFire
		n.Status, n.PendingJob = push.StatusInQueue, &j
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.now = firstFire.Add(time.Minute)
	s := New(Config{}, e.st, e.log, e.sole(t), zap.NewNop(), metrics.NewSet(), func() time.Time { return e.now })
	got, stop := e.jobs(t)
	defer stop()
	if n, err := s.Tick(ctx); err != nil || n != 1 {
		t.Fatalf("refiring: %d (err %v), want 1", n, err)
	}
	waitfor.True(t, 5*time.Second, "the job in push.jobs", func() bool { return len(got()) == 1 })
	if j := got()[0]; !j.QueryAt.Equal(firstFire) {
		t.Fatalf("refired job queryAt %v, want the first firing's %v", j.QueryAt, firstFire)
	}

	// The state a kill at scheduler/after-job leaves, once the planner took the job.
	sp2 := e.schedule(t, "app1", e.now)
	if _, err := e.st.UpdateNotification(ctx, "app1", sp2.Job.NotificationObjectID, func(n *push.Notification) error {
		n.Status = push.StatusInProcess
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(time.Minute)
	if _, err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.GetScheduled(ctx, "app1", sp2.ID); err == nil {
		t.Fatal("the schedule of a push the planner took is still there")
	}
	if n := len(got()); n != 1 {
		t.Fatalf("%d jobs, want 1: a job the planner took was appended again", n)
	}
}
