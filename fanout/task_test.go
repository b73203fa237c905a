package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/store/pebble"
)

// planDirect plans job without the log: it writes the record as the planner does and returns
// the tasks.
func (e *env) planDirect(job push.Job, pcfg PlannerConfig) (push.Job, []push.Task) {
	e.t.Helper()
	job = e.submitRecordOnly(job)
	p, err := NewPlanner(pcfg, e.st, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		e.t.Fatal(err)
	}
	tasks, err := splitJob(p.cfg, &job, 64)
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.st.UpdateNotification(context.Background(), testApp, job.NotificationObjectID, func(n *push.Notification) error {
		n.Status, n.Tasks = push.StatusInProcess, len(tasks)
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return job, tasks
}

func (e *env) submitRecordOnly(job push.Job) push.Job {
	e.t.Helper()
	jobSeq++
	job.ID = fmt.Sprintf("djob%d", jobSeq)
	job.AppID = testApp
	job.NotificationObjectID = "n-" + job.ID
	if job.Kind == "" {
		job.Kind = push.JobQuery
	}
	job.Data = json.RawMessage(`{"alert":"hi"}`)
	job.Prod = "prod"
	n := push.Notification{ObjectID: job.NotificationObjectID, AppID: testApp, JobID: job.ID, Status: push.StatusInQueue, CreatedAt: time.Now()}
	if err := e.st.CreateNotification(context.Background(), n); err != nil {
		e.t.Fatal(err)
	}
	return job
}

func (e *env) worker(cfg WorkerConfig, snd Sender) *Worker {
	e.t.Helper()
	w, err := NewWorker(cfg, e.st, e.lg, snd, zap.NewNop(), metrics.NewSet())
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

func TestFanoutFlowControlPacesTask(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, 1000)
	clk := &fakeClock{now: time.Now()}
	cfg := DefaultWorkerConfig()
	cfg.clock = clk
	var sizes []int
	var mu sync.Mutex
	snd := newRecSender()
	snd.hook = func(n int) { mu.Lock(); sizes = append(sizes, n); mu.Unlock() }
	w := e.worker(cfg, snd)
	// 1000 targets/s over 8 tasks: 125/s each.
	_, tasks := e.planDirect(push.Job{FlowControl: 1000}, DefaultPlannerConfig())
	if len(tasks) != 8 || tasks[0].Rate != 125 {
		t.Fatalf("%d tasks at rate %v, want 8 at 125", len(tasks), tasks[0].Rate)
	}
	if err := w.RunTask(context.Background(), &tasks[0]); err != nil {
		t.Fatal(err)
	}
	n := snd.count()
	if n < 50 {
		t.Fatalf("task 0 sent only %d", n)
	}
	// The first batch goes at once; every later one waits its share: (n - first)/125 s.
	minSlept := time.Duration(float64(n-sizes[0]) / 125 * float64(time.Second))
	if clk.slept < minSlept-time.Millisecond || clk.slept > minSlept+time.Second/10 {
		t.Errorf("slept %v for %d deliveries at 125/s, want about %v", clk.slept, n, minSlept)
	}
	for _, s := range sizes {
		if s > 12 {
			t.Errorf("batch of %d at 125/s: batches must cover at most ~100 ms", s)
		}
	}
}

// failingSender sends like rec until it has sent after deliveries, then fails every call,
// like a process that dies mid-push.
type failingSender struct {
	*recSender
	after int
}

func (s *failingSender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	if s.count()+len(ds) > s.after {
		// Deliver part of the batch, then "crash": those deliveries happened but the worker
		// never learns it.
		part := s.after - s.count()
		if part > 0 {
			_ = s.recSender.Send(ctx, ds[:part], res[:part])
		}
		return errors.New("crash")
	}
	return s.recSender.Send(ctx, ds, res)
}

func TestFanoutCrashResumesFromCheckpoint(t *testing.T) {
	const n = 3000
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, n)
	cfg := DefaultWorkerConfig()
	cfg.BatchSize = 32
	cfg.CheckpointEvery = 100
	// One batch at the sender: the bound is the checkpoint interval's alone (the batches sent
	// ahead add theirs: TestFanoutSendAheadCrashResumes). With more, how many were ahead at the
	// crash depends on how fast the checkpoints are written.
	cfg.SendAhead = 1
	job, tasks := e.planDirect(push.Job{}, PlannerConfig{BucketsPerTask: 64, IDsPerTask: 1000})
	if len(tasks) != 1 {
		t.Fatalf("%d tasks", len(tasks))
	}
	rec := newRecSender()
	crashes := 0
	for _, after := range []int{250, 900, 1500} {
		err := e.worker(cfg, &failingSender{recSender: rec, after: after}).RunTask(context.Background(), &tasks[0])
		if err == nil {
			t.Fatalf("task finished before the crash at %d", after)
		}
		crashes++
	}
	if err := e.worker(cfg, rec).RunTask(context.Background(), &tasks[0]); err != nil {
		t.Fatal(err)
	}
	want := expected(t, n, `{}`)
	dups := 0
	for id := range want {
		c := rec.got[id]
		if c < 1 {
			t.Errorf("%s never delivered", id)
		}
		dups += c - 1
	}
	if dups > crashes*cfg.CheckpointEvery {
		t.Errorf("%d duplicates after %d crashes, want at most %d", dups, crashes, crashes*cfg.CheckpointEvery)
	}
	t.Logf("%d targets, %d duplicates after %d crashes (bound %d)", len(want), dups, crashes, crashes*cfg.CheckpointEvery)
	r := e.record(job.NotificationObjectID)
	if r.Status != push.StatusDone {
		t.Errorf("status %s", r.Status)
	}
	checkCounts(t, r.Counts, countsOf(want)) // duplicates are not counted twice
}

func TestFanoutCompletionIsIdempotent(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, 500)
	job, tasks := e.planDirect(push.Job{}, PlannerConfig{BucketsPerTask: 32, IDsPerTask: 1000})
	if len(tasks) != 2 {
		t.Fatalf("%d tasks", len(tasks))
	}
	rec := newRecSender()
	w := e.worker(DefaultWorkerConfig(), rec)
	ctx := context.Background()
	if err := w.RunTask(ctx, &tasks[0]); err != nil {
		t.Fatal(err)
	}
	first := e.record(job.NotificationObjectID)
	// Redelivered after finishing: skipped, record unchanged.
	if err := w.RunTask(ctx, &tasks[0]); err != nil {
		t.Fatal(err)
	}
	if again := e.record(job.NotificationObjectID); again.TasksDone != 1 || !again.Counts.Total().Equal(first.Counts.Total()) {
		t.Errorf("record changed by a redelivered task: %+v then %+v", first.Counts, again.Counts)
	}
	sent := rec.count()

	// Crash between final progress and the record update: the progress says done, the record
	// does not know. The redelivery adds the counts once, without sending again.
	p := push.TaskProgress{JobID: job.ID, TaskID: tasks[1].ID, Done: true, Cursor: appendRangeCursor(nil, 64, nil),
		Counts: push.Counts{push.ChannelAPNs: {Targets: 7, Sent: 7}}}
	if err := e.st.PutTaskProgress(ctx, p); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := w.RunTask(ctx, &tasks[1]); err != nil {
			t.Fatal(err)
		}
	}
	r := e.record(job.NotificationObjectID)
	if r.Status != push.StatusDone || r.TasksDone != 2 {
		t.Errorf("status %s tasks done %d", r.Status, r.TasksDone)
	}
	if got, want := r.Counts[push.ChannelAPNs].Targets, first.Counts[push.ChannelAPNs].Targets+7; got != want {
		t.Errorf("apns targets %d, want %d", got, want)
	}
	if rec.count() != sent {
		t.Errorf("a done task sent again")
	}
}

func TestFanoutPlannerReplanIsIdempotent(t *testing.T) {
	const n = 1000
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, n)
	pcfg := DefaultPlannerConfig()
	pcfg.MinTaskRows = 0 // split however small the source (TestFanoutPlannerSizesTasks)
	p, err := NewPlanner(pcfg, e.st, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	job := e.submitRecordOnly(push.Job{Where: json.RawMessage(`{"channels":"news"}`)})
	ctx := context.Background()
	for range 2 { // a job redelivered after the planner crashed before committing it
		if err := p.Plan(ctx, &job); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.record(job.NotificationObjectID); r.Tasks != 8 || r.Status != push.StatusInProcess {
		t.Fatalf("record tasks %d status %s", r.Tasks, r.Status)
	}
	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 1)
	r := e.waitDone(job.NotificationObjectID)
	want := expected(t, n, `{"channels":"news"}`)
	checkDelivered(t, snd, want)
	checkCounts(t, r.Counts, countsOf(want))
}

func TestFanoutPlannerSources(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	p, err := NewPlanner(PlannerConfig{BucketsPerTask: 16, IDsPerTask: 2}, e.st, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		where  string
		kind   push.JobKind
		ids    []string
		source push.Source
		tasks  int
		check  func(t *testing.T, ts []push.Task)
	}{
		{where: `{}`, source: push.SourceBucket, tasks: 4},
		{where: `{"deviceType":"ios","channels":{"$all":["b","a"]}}`, source: push.SourceChannel, tasks: 4,
			check: func(t *testing.T, ts []push.Task) {
				if ts[0].Channel != "a" || ts[3].BucketLo != 48 || ts[3].BucketHi != 64 || ts[1].ID != "J/16-32" {
					t.Errorf("task %+v", ts[0])
				}
			}},
		{where: `{"objectId":{"$in":["c","a","b"]},"deviceToken":{"$in":["t1","t2","t3","t4"]}}`, source: push.SourcePoint, tasks: 2,
			check: func(t *testing.T, ts []push.Task) {
				if ts[0].IDKind != kindObjectID || len(ts[0].IDs) != 2 || ts[1].IDs[0] != "c" || ts[1].ID != "J/p1" {
					t.Errorf("tasks %+v %+v", ts[0], ts[1])
				}
			}},
		{where: `{"objectId":{"$in":[]}}`, tasks: 0},
		{kind: push.JobDevices, ids: []string{"x", "y", "x"}, source: push.SourcePoint, tasks: 1,
			check: func(t *testing.T, ts []push.Task) {
				if ts[0].IDKind != push.KindIID || len(ts[0].IDs) != 2 {
					t.Errorf("task %+v", ts[0])
				}
			}},
	} {
		job := push.Job{ID: "J", Kind: c.kind, Where: json.RawMessage(c.where), DeviceIDs: c.ids, FlowControl: 4000}
		if c.kind == "" {
			job.Kind = push.JobQuery
		}
		ts, err := splitJob(p.cfg, &job, 64)
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		if len(ts) != c.tasks {
			t.Fatalf("%s: %d tasks, want %d", c.where, len(ts), c.tasks)
		}
		for _, task := range ts {
			if task.Source != c.source || task.Of != c.tasks || task.Rate != 4000/float64(c.tasks) {
				t.Errorf("%s: task %s source %s of %d rate %v", c.where, task.ID, task.Source, task.Of, task.Rate)
			}
		}
		if c.check != nil {
			c.check(t, ts)
		}
	}
	if _, err := splitJob(p.cfg, &push.Job{ID: "J", Kind: push.JobQuery, Where: json.RawMessage(`{"$bad":1}`)}, 64); err == nil {
		t.Error("an invalid where planned")
	}
}

func TestFanoutPlannerInvalidWhereFinishesRecord(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.start(DefaultWorkerConfig(), newRecSender(), 1)
	job := e.submit(push.Job{Where: json.RawMessage(`{"$nope":1}`)})
	r := e.waitDone(job.NotificationObjectID)
	if len(r.Errors) != 1 || r.Tasks != 0 {
		t.Errorf("record %+v", r)
	}
}

func TestFanoutPacer(t *testing.T) {
	clk := &fakeClock{now: time.Unix(0, 0)}
	p := newPacer(clk, 100)
	ctx := context.Background()
	for range 10 {
		if err := p.wait(ctx, 10); err != nil {
			t.Fatal(err)
		}
	}
	if clk.slept != 900*time.Millisecond {
		t.Errorf("slept %v for 100 at 100/s, want 900ms (the first 10 go at once)", clk.slept)
	}
	if newPacer(clk, 0) != nil {
		t.Error("rate 0 paces")
	}
	for _, c := range []struct {
		rate float64
		want int
	}{{0, 256}, {100000, 256}, {125, 12}, {5, 1}} {
		if got := batchFor(256, c.rate); got != c.want {
			t.Errorf("batchFor(256, %v) = %d, want %d", c.rate, got, c.want)
		}
	}
}

func TestFanoutCursorRoundTrip(t *testing.T) {
	c := appendRangeCursor(nil, 17, []byte("row"))
	b, row, err := decodeRangeCursor(c, 16, 24)
	if err != nil || b != 17 || string(row) != "row" {
		t.Errorf("got %d %q %v", b, row, err)
	}
	if _, _, err := decodeRangeCursor(c, 0, 8); err == nil {
		t.Error("a cursor outside the task's range decoded")
	}
	if b, _, err := decodeRangeCursor(nil, 8, 16); err != nil || b != 8 {
		t.Errorf("empty cursor: %d %v", b, err)
	}
	if i, err := decodePointCursor(appendPointCursor(nil, 5), 10); err != nil || i != 5 {
		t.Errorf("point cursor %d %v", i, err)
	}
	if _, err := decodePointCursor(appendPointCursor(nil, 11), 10); err == nil {
		t.Error("a point cursor past the ids decoded")
	}
}

// A query push is cut into as many tasks as its source holds MinTaskRows rows (counted in the
// first range, scaled), one at least and at most one per BucketsPerTask buckets; a job planned
// again appends the plan its record counts, even when the source has grown in between; and
// every target is still delivered once, whatever the cut.
func TestFanoutPlannerSizesTasks(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, 300)
	planner := func(minRows int) (*Planner, *metrics.Set) {
		pcfg := DefaultPlannerConfig() // 64 buckets / 8: 8 tasks when fully split
		pcfg.MinTaskRows = minRows
		ms := metrics.NewSet()
		p, err := NewPlanner(pcfg, e.st, e.lg, zap.NewNop(), ms)
		if err != nil {
			t.Fatal(err)
		}
		return p, ms
	}
	p, ms := planner(1000)
	ctx := context.Background()
	plan := func(p *Planner, where string) (push.Job, int) {
		t.Helper()
		job := e.submitRecordOnly(push.Job{Where: json.RawMessage(where)})
		if err := p.Plan(ctx, &job); err != nil {
			t.Fatal(err)
		}
		return job, e.record(job.NotificationObjectID).Tasks
	}

	// 300 rows, 1,000 a task: one task.
	small, n := plan(p, `{}`)
	if n != 1 {
		t.Fatalf("a push to 300 installations planned as %d tasks, want 1", n)
	}
	// The source grows; the job is planned again (a redelivery): the record still counts
	// one task, and one task is what is appended (the deliveries below show it).
	now := time.Now()
	more := make([]push.Installation, 0, 1000)
	for i := 300; i < 1300; i++ {
		more = append(more, testInst(i, now))
	}
	if err := e.st.SeedInstallations(testApp, 64, more); err != nil {
		t.Fatal(err)
	}
	if err := p.Plan(ctx, &small); err != nil {
		t.Fatal(err)
	}
	// By channel: "news" holds about 430 of the 1,300: one task.
	news, n := plan(p, `{"channels":"news"}`)
	if n != 1 {
		t.Errorf("a push to channel news planned as %d tasks, want 1", n)
	}
	// 1,300 rows, 300 a task: about four tasks, as the first range's count says.
	p300, _ := planner(300)
	mid, n := plan(p300, `{}`)
	first, _, err := e.st.CountSource(ctx, testApp, "", 0, 8, 64, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := min(max(first*8/300, 1), 8); n != want || n < 3 || n > 5 {
		t.Errorf("a push to 1,300 installations at 300 a task planned as %d tasks, want %d (%d rows in the first of 8 ranges)", n, want, first)
	}
	// 1,300 rows, 100 a task: every range holds more, the full split.
	p100, _ := planner(100)
	big, n := plan(p100, `{}`)
	if n != 8 {
		t.Errorf("a push to 1,300 installations at 100 a task planned as %d tasks, want 8", n)
	}
	if got := ms.GetOrCreateCounter(`pushd_fanout_jobs_regrouped_total`).Get(); got != 3 {
		t.Errorf("pushd_fanout_jobs_regrouped_total %d, want 3 (the first push, planned twice; news)", got)
	}

	snd := newRecSender()
	e.start(DefaultWorkerConfig(), snd, 1)
	want := map[string]int{}
	for _, c := range []struct {
		job   push.Job
		where string
	}{{small, `{}`}, {news, `{"channels":"news"}`}, {mid, `{}`}, {big, `{}`}} {
		r := e.waitDone(c.job.NotificationObjectID)
		if r.TasksDone != r.Tasks {
			t.Errorf("push %s: %d of %d tasks done", c.where, r.TasksDone, r.Tasks)
		}
		exp := expected(t, 1300, c.where)
		checkCounts(t, r.Counts, countsOf(exp))
		for id := range exp {
			want[id]++
		}
	}
	snd.mu.Lock()
	defer snd.mu.Unlock()
	for id, n := range want {
		if snd.got[id] != n {
			t.Errorf("%s delivered %d times, want %d", id, snd.got[id], n)
		}
	}
}

// progressLog is the Pebble store noting how each task progress is written.
type progressLog struct {
	*pebble.Store
	mu     sync.Mutex
	writes []string // "sync" or "nosync", with the progress's Done
}

func (p *progressLog) note(kind string, pr push.TaskProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = append(p.writes, fmt.Sprintf("%s done=%t", kind, pr.Done))
}

func (p *progressLog) PutTaskProgress(ctx context.Context, pr push.TaskProgress) error {
	p.note("sync", pr)
	return p.Store.PutTaskProgress(ctx, pr)
}

func (p *progressLog) PutTaskProgressNoSync(ctx context.Context, pr push.TaskProgress) error {
	p.note("nosync", pr)
	return p.Store.PutTaskProgressNoSync(ctx, pr)
}

// A task's final progress goes without its own fsync when the record update that completes
// the task follows it (that update's fsync covers it); when the record already lists the
// task, so nothing synced follows, the progress is written again, synced.
func TestFanoutFinalProgressSyncedByTheRecordUpdate(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, 50)
	pl := &progressLog{Store: e.st}
	w, err := NewWorker(DefaultWorkerConfig(), pl, e.lg, newRecSender(), zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, listed := range []bool{false, true} {
		pl.writes = nil
		job, tasks := e.planDirect(push.Job{}, PlannerConfig{BucketsPerTask: 64, IDsPerTask: 1000})
		if listed { // a copy of the task finished it already
			if _, err := e.st.UpdateNotification(ctx, testApp, job.NotificationObjectID, func(n *push.Notification) error {
				n.TasksFinished = append(n.TasksFinished, taskSuffix(&tasks[0]))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.RunTask(ctx, &tasks[0]); err != nil {
			t.Fatal(err)
		}
		want := []string{"nosync done=true"}
		if listed {
			want = append(want, "sync done=true")
		}
		if !slices.Equal(pl.writes, want) {
			t.Errorf("record listing the task already: %t; progress writes %q, want %q", listed, pl.writes, want)
		}
		if p, err := e.st.GetTaskProgress(ctx, job.ID, tasks[0].ID); err != nil || !p.Done {
			t.Errorf("final progress %+v, %v", p, err)
		}
	}
}

// countingMessages is a job's renderer that counts what is asked of it.
type countingMessages struct {
	Messages
	mu  sync.Mutex
	got map[string]int
}

func (c *countingMessages) Get(channel string) (*push.Message, error) {
	c.mu.Lock()
	c.got[channel]++
	c.mu.Unlock()
	return c.Messages.Get(channel)
}

// A job's messages are rendered on their channel's first target, once per worker, whatever
// the number of tasks and batches: a push that reaches only iOS devices renders the APNs
// payload alone, and one that reaches nobody renders nothing.
func TestFanoutRendersOnlyTheChannelsReached(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, 400)
	for _, c := range []struct {
		where string
		want  map[string]int
	}{
		{`{"deviceType":"ios"}`, map[string]int{push.ChannelAPNs: 1}},
		{`{"deviceType":"ios","age":{"$gt":1000}}`, map[string]int{}},
	} {
		var cm *countingMessages
		w := e.worker(DefaultWorkerConfig(), newRecSender())
		w.newMessages = func(j *push.Job) Messages {
			cm = &countingMessages{Messages: render.NewCache(j), got: map[string]int{}}
			return cm
		}
		job, tasks := e.planDirect(push.Job{Where: json.RawMessage(c.where)}, PlannerConfig{BucketsPerTask: 16, IDsPerTask: 1000})
		for i := range tasks {
			if err := w.RunTask(context.Background(), &tasks[i]); err != nil {
				t.Fatal(err)
			}
		}
		r := e.record(job.NotificationObjectID)
		checkCounts(t, r.Counts, countsOf(expected(t, 400, c.where)))
		if !maps.Equal(cm.got, c.want) {
			t.Errorf("%s over %d tasks: rendered %v, want %v", c.where, len(tasks), cm.got, c.want)
		}
	}
}

// A job planned as one task runs in the planner (PlannerConfig.InlineSingle, the runner wired
// as internal/node does): no worker consumes push.tasks here, yet the push is delivered, exact,
// by the time Plan returns. Stopped in the middle (its context ends during a send), Plan fails
// with the task checkpointed; planned again (the job's redelivery), the task resumes from its
// checkpoint: every installation is delivered once.
func TestFanoutPlannerRunsAJobOfOneTaskItself(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, 300)
	snd := newRecSender()
	wcfg := DefaultWorkerConfig()
	wcfg.BatchSize, wcfg.SendAhead = 20, 1
	reads := &readLog{Store: e.st}
	w, err := NewWorker(wcfg, reads, e.lg, snd, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	ms := metrics.NewSet()
	ul := &updateLog{Store: e.st}
	p, err := NewPlanner(DefaultPlannerConfig(), ul, e.lg, zap.NewNop(), ms)
	if err != nil {
		t.Fatal(err)
	}
	p.SetRunner(w)
	exp := expected(t, 300, `{}`) // the installations a push to everyone is delivered to
	want := len(exp)

	whole := e.submitRecordOnly(push.Job{Where: json.RawMessage(`{}`)})
	if err := p.Plan(context.Background(), &whole); err != nil {
		t.Fatal(err)
	}
	r := e.record(whole.NotificationObjectID)
	if r.Status != push.StatusDone || r.Tasks != 1 || r.TasksDone != 1 {
		t.Fatalf("after Plan: status %s, %d of %d tasks done; want done, 1 of 1", r.Status, r.TasksDone, r.Tasks)
	}
	checkCounts(t, r.Counts, countsOf(exp))
	if snd.count() != want || snd.distinct() != want {
		t.Fatalf("%d deliveries to %d installations, want %d to as many", snd.count(), snd.distinct(), want)
	}
	if got := ms.GetOrCreateCounter(`pushd_fanout_tasks_inline_total`).Get(); got != 1 {
		t.Errorf("pushd_fanout_tasks_inline_total %d, want 1", got)
	}
	// Taken from the queue into its first plan (FreshPlan), the task read neither its
	// progress (there is none) nor its record (the plan's is passed along).
	if p, r := reads.counts(); p != 0 || r != 0 {
		t.Errorf("the task of a fresh plan read its progress %d times and its record %d times, want 0", p, r)
	}
	// The plan was recorded without an fsync of its own (the task's synced writes follow);
	// a planner that appends the task records it synced.
	if !slices.Equal(ul.take(), []string{"change nosync"}) {
		t.Errorf("plan of a task run inline recorded %q, want one update without fsync", ul.writes)
	}
	appender, err := NewPlanner(DefaultPlannerConfig(), ul, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	appended := e.submitRecordOnly(push.Job{Where: json.RawMessage(`{}`)})
	if err := appender.Plan(context.Background(), &appended); err != nil {
		t.Fatal(err)
	}
	if got := ul.take(); !slices.Equal(got, []string{"change sync"}) {
		t.Errorf("plan of a task appended recorded %q, want one synced update", got)
	}

	// Stopped after three batches of 20, then planned again.
	snd = newRecSender()
	reads = &readLog{Store: e.st}
	w2, err := NewWorker(wcfg, reads, e.lg, snd, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	p.SetRunner(w2)
	ctx, cancel := context.WithCancel(context.Background())
	var batches atomic.Int32
	snd.hook = func(int) {
		if batches.Add(1) == 4 {
			cancel()
		}
	}
	stopped := e.submitRecordOnly(push.Job{Where: json.RawMessage(`{}`)})
	if err := p.Plan(ctx, &stopped); err == nil {
		t.Fatal("Plan of a task stopped in the middle returned nil")
	}
	first := snd.count()
	if r := e.record(stopped.NotificationObjectID); r.Status != push.StatusInProcess || r.Tasks != 1 || first == 0 || first >= want {
		t.Fatalf("after the stop: status %s, %d tasks, %d delivered; want in process, 1 task, some delivered", r.Status, r.Tasks, first)
	}
	snd.hook = nil
	reads.counts() // from zero: the planning again
	if err := p.Plan(context.Background(), &stopped); err != nil {
		t.Fatal(err)
	}
	if p, r := reads.counts(); p != 1 || r != 1 {
		t.Errorf("the task planned again read its progress %d times and its record %d times, want once each", p, r)
	}
	r = e.record(stopped.NotificationObjectID)
	if r.Status != push.StatusDone || r.TasksDone != 1 {
		t.Fatalf("planned again: status %s, %d tasks done", r.Status, r.TasksDone)
	}
	checkCounts(t, r.Counts, countsOf(exp))
	snd.mu.Lock()
	defer snd.mu.Unlock()
	for id, n := range snd.got {
		if n != 1 {
			t.Errorf("installation %s delivered %d times, want once (%d delivered before the stop)", id, n, first)
		}
	}
	if len(snd.got) != want {
		t.Errorf("%d installations delivered, want %d", len(snd.got), want)
	}
}

// readLog is the real store, counting the task's reads of its progress and its record.
type readLog struct {
	*pebble.Store
	progress, records atomic.Int32
}

// counts returns the reads since the last call.
func (r *readLog) counts() (progress, records int32) {
	return r.progress.Swap(0), r.records.Swap(0)
}

func (r *readLog) GetTaskProgress(ctx context.Context, jobID, taskID string) (push.TaskProgress, error) {
	r.progress.Add(1)
	return r.Store.GetTaskProgress(ctx, jobID, taskID)
}

func (r *readLog) GetNotification(ctx context.Context, app, oid string) (push.Notification, error) {
	r.records.Add(1)
	return r.Store.GetNotification(ctx, app, oid)
}

// updateLog is the real store, noting how each record update was committed.
type updateLog struct {
	*pebble.Store
	mu     sync.Mutex
	writes []string
}

func (u *updateLog) note(w string) {
	u.mu.Lock()
	u.writes = append(u.writes, w)
	u.mu.Unlock()
}

func (u *updateLog) take() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	w := u.writes
	u.writes = nil
	return w
}

func (u *updateLog) UpdateNotification(ctx context.Context, app, oid string, fn func(*push.Notification) error) (push.Notification, error) {
	u.note("sync")
	return u.Store.UpdateNotification(ctx, app, oid, fn)
}

func (u *updateLog) UpdateNotificationNoSync(ctx context.Context, app, oid string, fn func(*push.Notification) error) (push.Notification, error) {
	u.note("nosync")
	return u.Store.UpdateNotificationNoSync(ctx, app, oid, fn)
}

func (u *updateLog) ChangeNotification(ctx context.Context, app, oid string, fn func(*push.Notification) error, sync bool) error {
	if sync {
		u.note("change sync")
	} else {
		u.note("change nosync")
	}
	return u.Store.ChangeNotification(ctx, app, oid, fn, sync)
}

// A plan's ranges joined into k tasks cover the buckets once, in order, in runs that differ by
// at most one range, with the ids the ranges give (the same (plan, k) gives the same tasks);
// every task carries the job and knows how many there are.
func TestFanoutTaskPlanJoinsRanges(t *testing.T) {
	cfg := DefaultPlannerConfig()
	cfg.BucketsPerTask = 8
	job := push.Job{ID: "J", AppID: "a", Kind: push.JobQuery, Where: json.RawMessage(`{"channels":"news"}`), FlowControl: 90}
	tp, err := splitPlan(cfg, &job, 100) // 13 ranges, the last of 4 buckets
	if err != nil {
		t.Fatal(err)
	}
	if tp.len() != 13 || tp.src != push.SourceChannel || tp.channel != "news" {
		t.Fatalf("plan of %d ranges from %s %q, want 13 from channel news", tp.len(), tp.src, tp.channel)
	}
	for k := 0; k <= 15; k++ {
		ts := tp.tasks(&job, k)
		want := min(max(k, 1), 13)
		if len(ts) != want {
			t.Fatalf("k=%d: %d tasks, want %d", k, len(ts), want)
		}
		next, sizes := 0, map[int]bool{}
		for i, task := range ts {
			if task.BucketLo != next || task.BucketHi <= task.BucketLo {
				t.Fatalf("k=%d: task %d spans %d-%d after %d", k, i, task.BucketLo, task.BucketHi, next)
			}
			next = task.BucketHi
			sizes[(task.BucketHi-task.BucketLo+7)/8] = true
			if task.ID != rangeTaskID("J", task.BucketLo, task.BucketHi) || task.Job.ID != "J" ||
				task.Source != push.SourceChannel || task.Channel != "news" || task.Of != want || task.Rate != 90/float64(want) {
				t.Fatalf("k=%d: task %d is %+v", k, i, task)
			}
		}
		if next != 100 || len(sizes) > 2 {
			t.Fatalf("k=%d: tasks end at bucket %d with run lengths %v", k, next, sizes)
		}
		if again := tp.tasks(&job, k); !reflect.DeepEqual(again, ts) {
			t.Fatalf("k=%d: the same plan built other tasks", k)
		}
	}
	full, err := splitJob(cfg, &job, 100)
	if err != nil || !reflect.DeepEqual(full, tp.tasks(&job, 13)) {
		t.Fatalf("splitJob differs from the plan's every range: %v", err)
	}
}

// A query push whose source holds no row its task would read is planned no task: its record
// goes straight to done, and nothing is scanned, written or completed for it. A source empty in
// the first range only (the planner counts that one) is not empty, and a device type is known
// absent only from a scan remembered since the app's last write of index rows.
func TestFanoutPlannerPlansNoTaskForAnEmptySource(t *testing.T) {
	e := newEnv(t)
	e.createApp(64, nil)
	// Android installations only, none in buckets 0 to 7 (the first range the planner counts).
	now := time.Now()
	var seeded []push.Installation
	for i := 1; len(seeded) < 40; i += 2 {
		inst := testInst(i, now)
		if i%97 == 0 || i%89 == 0 || push.Bucket(inst.ObjectID, 64) < 8 {
			continue // every seeded row is a target of a push to everyone
		}
		seeded = append(seeded, inst)
	}
	if err := e.st.SeedInstallations(testApp, 64, seeded); err != nil {
		t.Fatal(err)
	}
	snd := newRecSender()
	w, err := NewWorker(DefaultWorkerConfig(), e.st, e.lg, snd, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	ms := metrics.NewSet()
	p, err := NewPlanner(DefaultPlannerConfig(), e.st, e.lg, zap.NewNop(), ms)
	if err != nil {
		t.Fatal(err)
	}
	p.SetRunner(w)
	plan := func(where string, tasks, delivered int) {
		t.Helper()
		before := snd.count()
		job := e.submitRecordOnly(push.Job{Where: json.RawMessage(where)})
		if err := p.Plan(context.Background(), &job); err != nil {
			t.Fatal(err)
		}
		r := e.record(job.NotificationObjectID)
		if r.Status != push.StatusDone || r.Tasks != tasks || r.TasksDone != tasks {
			t.Errorf("push %s: status %s, %d of %d tasks done; want done, %d of %d", where, r.Status, r.TasksDone, r.Tasks, tasks, tasks)
		}
		if got := snd.count() - before; got != delivered {
			t.Errorf("push %s: %d deliveries, want %d", where, got, delivered)
		}
	}
	empty := func(want uint64) {
		t.Helper()
		if got := ms.GetOrCreateCounter(`pushd_fanout_jobs_empty_total`).Get(); got != want {
			t.Errorf("pushd_fanout_jobs_empty_total %d, want %d", got, want)
		}
	}

	plan(`{"channels":"nobody"}`, 0, 0)
	empty(1)
	plan(`{}`, 1, len(seeded)) // the first range is empty, the others are not
	plan(`{"channels":"news"}`, 1, len(slices.DeleteFunc(slices.Clone(seeded), func(in push.Installation) bool {
		return !slices.Contains(in.Route.Channels, "news")
	})))
	empty(1)
	// No iOS installation: the first push scans for them (and the store remembers that it
	// found none), the second is planned no task.
	plan(`{"deviceType":"ios"}`, 1, 0)
	plan(`{"deviceType":"ios"}`, 0, 0)
	empty(2)
	// An iOS installation arrives: the next push to iOS reaches it.
	ios := testInst(2, now)
	if err := e.st.PutInstallation(context.Background(), testApp, 64, ios); err != nil {
		t.Fatal(err)
	}
	plan(`{"deviceType":"ios"}`, 1, 1)
	empty(2)
}

// countCalls is the real store, recording each CountSource the planner asks for.
type countCalls struct {
	*pebble.Store
	calls [][4]int // lo, mid, hi, limit
}

func (s *countCalls) CountSource(ctx context.Context, appID, channel string, lo, mid, hi, limit int) (int, bool, error) {
	s.calls = append(s.calls, [4]int{lo, mid, hi, limit})
	return s.Store.CountSource(ctx, appID, channel, lo, mid, hi, limit)
}

// A query push's source is counted in one pass: the first range up to MinTaskRows, with
// whether any range holds a row; a plan of one range asks for one row only, and a push the
// store knows to find nobody of its device type is not counted at all.
func TestFanoutPlannerCountsOnce(t *testing.T) {
	for _, c := range []struct {
		buckets int
		where   string
		want    [][4]int
	}{
		{64, `{"channels":"nobody"}`, [][4]int{{0, 8, 64, DefaultPlannerConfig().MinTaskRows}}},
		{64, `{}`, [][4]int{{0, 8, 64, DefaultPlannerConfig().MinTaskRows}}},
		{8, `{"channels":"nobody"}`, [][4]int{{0, 8, 8, 1}}},
		{8, `{"deviceType":"ios"}`, [][4]int{{0, 8, 8, 1}}}, // its scan then remembers no iOS row
		{8, `{"deviceType":"ios"}`, nil},                    // known empty: not counted
	} {
		e := newEnv(t)
		e.createApp(c.buckets, nil)
		var android []push.Installation
		for i := 1; i < 40; i += 2 { // odd: Android only (testFields)
			android = append(android, testInst(i, time.Now()))
		}
		if err := e.st.SeedInstallations(testApp, c.buckets, android); err != nil {
			t.Fatal(err)
		}
		st := &countCalls{Store: e.st}
		p, err := NewPlanner(DefaultPlannerConfig(), st, e.lg, zap.NewNop(), metrics.NewSet())
		if err != nil {
			t.Fatal(err)
		}
		p.SetRunner(e.worker(DefaultWorkerConfig(), newRecSender()))
		job := e.submitRecordOnly(push.Job{Where: json.RawMessage(c.where)})
		if err := p.Plan(context.Background(), &job); err != nil {
			t.Fatal(err)
		}
		if c.want == nil { // the same push again, on the same store
			st.calls = nil
			job := e.submitRecordOnly(push.Job{Where: json.RawMessage(c.where)})
			if err := p.Plan(context.Background(), &job); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(st.calls, c.want) {
			t.Errorf("%d buckets, %s: counted %v, want %v", c.buckets, c.where, st.calls, c.want)
		}
	}
}
