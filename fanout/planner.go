package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/pushjson"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
)

// Log is the durable log as the planner uses it.
type Log interface {
	Appender
	Consumer
}

// kindObjectID marks a point task whose ids are object ids (a where pinning objectId).
const kindObjectID push.IDKind = "object"

// Planner consumes push.jobs and emits each job's tasks onto push.tasks.
type Planner struct {
	cfg    PlannerConfig
	st     PlannerStore
	log    Log
	logger *zap.Logger

	jobs      *metrics.Counter
	skipped   *metrics.Counter
	invalid   *metrics.Counter
	tasks     *metrics.Counter
	regrouped *metrics.Counter
	appendErr *metrics.Counter
	inlined   *metrics.Counter
	empty     *metrics.Counter

	// runner runs a job's only task in the planner (PlannerConfig.InlineSingle), or nil.
	runner TaskRunner
	// logSyncsStore: the log's synced writes make every earlier write of the store durable
	// (SetLogSyncsStore).
	logSyncsStore bool
}

// TaskRunner runs one task to its end in the caller's goroutine, as a worker runs a task it
// consumed: nil once its final progress and its counts are written, an error when it must be
// run again (Worker.RunInline).
type TaskRunner interface {
	RunInline(ctx context.Context, t *push.Task, fresh *FreshPlan) error
}

// FreshPlan is what the planner knows of the task it runs inline when it has just taken the
// push from the queue (in-queue, nothing planned) into its first plan: no task of the job has
// run, so the task has no progress to read, and the record is the one the plan wrote. nil
// when the job was planned before (a redelivery), when the task must read both.
type FreshPlan struct {
	Record push.Notification // as the planner's update wrote it
	ReadAt time.Time         // taken before that update read the record
}

// SetRunner makes the planner run a job planned as one task with r, when
// PlannerConfig.InlineSingle is set. Call it before Run.
func (p *Planner) SetRunner(r TaskRunner) { p.runner = r }

// SetLogSyncsStore tells the planner that the log's synced writes (an Append, the consumer's
// synced offset commit) make every earlier write of its store durable: queue/embedded over
// the store's own Pebble, one WAL for both. The planner then records every plan without an
// fsync of its own (RecordNoSync), since a synced write of the log always follows it before
// the job counts as handled: the tasks' append, or the offset commit that ends the consumer's
// read batch. A crash before that write loses the job's offset too, so the job is planned
// again; one after it finds the record written, as the WAL keeps the writes in their order.
// Never set it for Kafka or for a log in another database. Call it before Run.
func (p *Planner) SetLogSyncsStore() { p.logSyncsStore = true }

// NewPlanner builds a planner.
func NewPlanner(cfg PlannerConfig, st PlannerStore, lg Log, logger *zap.Logger, ms *metrics.Set) (*Planner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Planner{
		cfg:       cfg,
		st:        st,
		log:       lg,
		logger:    logger.Named("planner"),
		jobs:      ms.NewCounter(`pushd_fanout_jobs_planned_total`),
		skipped:   ms.NewCounter(`pushd_fanout_jobs_skipped_total`),
		invalid:   ms.NewCounter(`pushd_fanout_jobs_invalid_total`),
		tasks:     ms.NewCounter(`pushd_fanout_tasks_planned_total`),
		regrouped: ms.NewCounter(`pushd_fanout_jobs_regrouped_total`),
		appendErr: ms.NewCounter(`pushd_fanout_task_append_errors_total`),
		inlined:   ms.NewCounter(`pushd_fanout_tasks_inline_total`),
		empty:     ms.NewCounter(`pushd_fanout_jobs_empty_total`),
	}, nil
}

// Run consumes push.jobs as a member of the planner group until ctx ends.
func (p *Planner) Run(ctx context.Context) error {
	return p.log.Consume(ctx, queue.TopicJobs, queue.GroupPlanner, p.handle)
}

func (p *Planner) handle(ctx context.Context, m queue.Message) error {
	// Planning is fan-out's work too: it waits for a token while the API is busy (gate.go).
	h := p.hold()
	if err := h.enter(ctx); err != nil {
		return err
	}
	defer h.leave()
	var job push.Job
	if err := pushjson.DecodeJob(m.Value, &job); err != nil || job.ID == "" || job.AppID == "" {
		// A message that is not a job can never be planned: drop it rather than block the
		// partition forever.
		p.invalid.Inc()
		p.logger.Error("dropping undecodable job", zap.Int(telemetry.KeyPartition, m.Partition),
			zap.Int64(telemetry.KeyOffset, m.Offset), zap.Error(err))
		return nil
	}
	return p.plan(ctx, &job, h)
}

// hold returns the planner's place at the gate of the worker that runs its tasks (a hold
// without a gate when there is none).
func (p *Planner) hold() *gateHold {
	if r, ok := p.runner.(interface{ cpuGate() *cpuGate }); ok {
		return &gateHold{g: r.cpuGate()}
	}
	return nil
}

// errSkipJob aborts a record update when the job must not be (re)planned.
var errSkipJob = errors.New("job needs no planning")

// Plan splits one job into tasks, records how many on its push record (in-queue →
// in-process, dropping the record's pending job in the same write), then appends the tasks.
// It is idempotent: a job planned again (redelivered after a crash, or appended twice by a
// req_id retry or scheduler.Redriver) yields the same task ids, the record keeps its first
// plan, workers skip finished tasks, and a task finished twice is counted once.
func (p *Planner) Plan(ctx context.Context, job *push.Job) error {
	return p.plan(ctx, job, nil)
}

// plan is Plan holding h, the planner's place at the worker's gate, which it gives back
// before running the job's task (that takes its own).
func (p *Planner) plan(ctx context.Context, job *push.Job, h *gateHold) error {
	app, err := p.st.GetApp(ctx, job.AppID)
	if errors.Is(err, store.ErrNotFound) {
		p.skipped.Inc()
		p.jobLog(job).Info("skipping job of a deleted app")
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read app %s for job %s: %w", job.AppID, job.ID, err)
	}
	buckets := app.Settings.Buckets
	if buckets <= 0 {
		buckets = push.DefaultBuckets
	}

	tp, perr := p.split(job, buckets)
	if perr != nil {
		p.invalid.Inc()
		p.jobLog(job).Warn("job has an invalid where", zap.Error(perr))
		_, err := p.st.UpdateNotification(ctx, job.AppID, job.NotificationObjectID, func(n *push.Notification) error {
			if n.Finished() {
				return errSkipJob
			}
			n.Status = push.StatusDone
			n.PendingJob, n.PendingBy = nil, ""
			n.Errors = appendReason(n.Errors, perr.Error(), 20)
			n.UpdatedAt = time.Now()
			return nil
		})
		if err != nil && !errors.Is(err, errSkipJob) && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("cannot finish record %s of job %s: %w", job.NotificationObjectID, job.ID, err)
		}
		return nil
	}

	// As many tasks as the source holds MinTaskRows rows (PlannerConfig.MinTaskRows).
	k, err := p.taskCount(ctx, job, &tp, buckets)
	if err != nil {
		return err
	}
	var tasks []push.Task // none: the push has no target
	if k > 0 {
		tasks = tp.tasks(job, k)
	}

	// Record first, append second: once a worker can finish a task, the record already says
	// how many tasks make the push complete. A plan is recorded without an fsync of its own
	// where the store can (RecordNoSync) and a synced write follows that makes it durable:
	// the synced writes of the task that runs here, or the log's (SetLogSyncsStore).
	ns, noSync := p.st.(RecordNoSync)
	noSync = noSync && (p.inline(tasks) || p.logSyncsStore)
	update := func(fn func(*push.Notification) error) error {
		app, oid := job.AppID, job.NotificationObjectID
		var err error
		switch c, ok := p.st.(RecordChanger); {
		case ok:
			err = c.ChangeNotification(ctx, app, oid, fn, !noSync)
		case noSync:
			_, err = ns.UpdateNotificationNoSync(ctx, app, oid, fn)
		default:
			_, err = p.st.UpdateNotification(ctx, app, oid, fn)
		}
		return err
	}
	var fresh *FreshPlan // set when this update takes the push into its first plan
	readAt := time.Now()
	err = update(func(n *push.Notification) error {
		fresh = nil // the store may call fn again (a retried compare-and-set)
		first := n.Status == push.StatusInQueue && n.Tasks == 0 && n.TasksDone == 0 && len(n.TasksFinished) == 0
		switch n.Status {
		case push.StatusCancelled, push.StatusDone:
			return errSkipJob
		case push.StatusInProcess:
			if n.Tasks > 0 {
				// Planned before a crash: keep the record, append again the tasks it counts
				// (the source may have grown or shrunk since it was counted).
				tasks = tp.tasks(job, min(n.Tasks, tp.len()))
				return errPlanned
			}
		}
		n.Status = push.StatusInProcess
		n.PendingJob, n.PendingBy = nil, "" // taken: no re-driver appends it again
		n.Tasks = len(tasks)
		n.TasksDone = 0
		n.TasksFinished = nil
		n.Counts = nil
		if len(tasks) == 0 {
			n.Status = push.StatusDone
		}
		n.UpdatedAt = time.Now()
		if first && len(tasks) > 0 { // only a task run here reads it
			fresh = &FreshPlan{Record: *n, ReadAt: readAt}
		}
		return nil
	})
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, errSkipJob):
		p.skipped.Inc()
		p.jobLog(job).Info("skipping job whose record is gone, cancelled or done")
		return nil
	case errors.Is(err, errPlanned):
		p.jobLog(job).Info("job planned again after a redelivery", zap.Int("tasks", len(tasks)))
	case err != nil:
		return fmt.Errorf("cannot mark record %s of job %s in process: %w", job.NotificationObjectID, job.ID, err)
	}
	fpPlannerAfterRecord.Hit()
	if len(tasks) == 0 {
		p.jobs.Inc()
		return nil
	}
	if p.inline(tasks) {
		// The job's only task runs here. A crash or a stop in it leaves the job's offset
		// uncommitted: the job is planned again, finds its record planned (errPlanned, the
		// same task id) and the task resumes from its checkpoint, as a worker's would.
		t := tasks[0]
		t.Job = *job
		h.leave()
		if err := p.runner.RunInline(ctx, &t, fresh); err != nil {
			return fmt.Errorf("cannot run the task of job %s: %w", job.ID, err)
		}
		p.jobs.Inc()
		p.tasks.Inc()
		p.inlined.Inc()
		return nil
	}

	parts := p.log.Partitions(queue.TopicTasks)
	recs := make([]queue.Record, len(tasks))
	jobJSON, err := pushjson.AppendJob(nil, job)
	if err != nil {
		return fmt.Errorf("cannot encode job %s: %w", job.ID, err)
	}
	for i := range tasks {
		v, err := encodeTask(&tasks[i], jobJSON)
		if err != nil {
			return fmt.Errorf("cannot encode task %s: %w", tasks[i].ID, err)
		}
		// Task i goes to partition i mod P, keyed by its first bucket. (BucketLo mod P would
		// put every task on P/BucketsPerTask partitions: with 64 partitions and 8 buckets per
		// task, 8 partitions would carry all the work.)
		key := tasks[i].BucketLo
		if tasks[i].Source == push.SourcePoint {
			key = i
		}
		recs[i] = queue.Record{Partition: i % parts, Key: taskKey(key), Value: v}
	}
	if err := p.log.Append(ctx, queue.TopicTasks, recs...); err != nil {
		p.appendErr.Inc()
		return fmt.Errorf("cannot append %d tasks of job %s: %w", len(recs), job.ID, err)
	}
	fpPlannerAfterTasks.Hit()
	p.jobs.Inc()
	p.tasks.Add(len(tasks))
	p.jobLog(job).Info("job planned", zap.Int("tasks", len(tasks)), zap.String("source", string(sourceOf(tasks))))
	return nil
}

var errPlanned = errors.New("job already planned")

// jobLog is the planner's logger with job's app and id. It is built where a line is logged,
// not once per job: a push planned in the usual way logs nothing here, and With copies the
// encoder (a kilobyte a push).
func (p *Planner) jobLog(job *push.Job) *zap.Logger {
	return p.logger.With(zap.String(telemetry.KeyAppID, job.AppID), zap.String(telemetry.KeyJobID, job.ID))
}

// inline says whether the plan tasks runs in the planner (PlannerConfig.InlineSingle): one
// task, not paced by flow_control, and a runner.
func (p *Planner) inline(tasks []push.Task) bool {
	return len(tasks) == 1 && tasks[0].Rate == 0 && p.cfg.InlineSingle && p.runner != nil
}

// SourceCounter is a store that can count the rows of a query push's source cheaply: the
// app's installations (channel "") or those in channel, in buckets lo to mid-1, up to limit
// (n), and whether buckets lo to hi-1 hold any at all (any), in one pass.
type SourceCounter interface {
	CountSource(ctx context.Context, appID, channel string, lo, mid, hi, limit int) (n int, any bool, err error)
}

// AbsenceKnower is a store that remembers scans narrowed to a device type that found no row
// (store/pebble): KnownEmpty says that a task's scan of the source's buckets lo to hi-1
// narrowed to deviceType would find none. false says nothing.
type AbsenceKnower interface {
	KnownEmpty(appID, channel, deviceType string, lo, hi int) bool
}

// taskCount is how many tasks a query push split into the ranges of tp should run as: as many
// as its source holds MinTaskRows rows, between 1 and tp.len(). The rows are counted in the
// first range only (at most MinTaskRows keys) and scaled to all of them: buckets are a hash of
// the objectId, so every range holds about the same share. tp.len() when the store cannot
// count, the plan is of point tasks, or MinTaskRows is 0.
//
// It is 0 when the store can tell that the source holds no row the job's scan would read: no
// row in any of its buckets (found in the same pass as the first range's count), or
// none of the device type the where pins, by a scan remembered (AbsenceKnower). Such a push
// has no target: it is done at once, with no task to read, write and complete.
func (p *Planner) taskCount(ctx context.Context, job *push.Job, tp *taskPlan, buckets int) (int, error) {
	if tp.src == push.SourcePoint || tp.len() == 0 {
		return tp.len(), nil
	}
	lo, hi := tp.spans[0][0], tp.spans[len(tp.spans)-1][1]
	knownEmpty := func() bool { // by a scan remembered: memory only, so asked before counting
		a, ok := p.st.(AbsenceKnower)
		return ok && tp.deviceType != "" && a.KnownEmpty(job.AppID, tp.channel, tp.deviceType, lo, hi)
	}
	if tp.len() == 1 && knownEmpty() {
		p.empty.Inc()
		return 0, nil
	}
	k, anyRow := tp.len(), true // anyRow false: counted, and the source holds no row at all
	c, counts := p.st.(SourceCounter)
	if counts && (p.cfg.MinTaskRows > 0 || tp.len() == 1) {
		// The first range's rows, and whether any range holds a row, in one pass. A plan of
		// one range needs only the second: one row tells.
		mid, limit := tp.spans[0][1], p.cfg.MinTaskRows
		if tp.len() == 1 {
			limit = 1
		}
		n, any, err := c.CountSource(ctx, job.AppID, tp.channel, lo, mid, hi, limit)
		if err != nil {
			return 0, fmt.Errorf("cannot count the source of job %s: %w", job.ID, err)
		}
		anyRow = any
		if tp.len() >= 2 { // so MinTaskRows > 0
			if n >= p.cfg.MinTaskRows {
				return tp.len(), nil // every range holds a task's worth
			}
			est := n * buckets / (mid - lo)
			k = min(max(est/p.cfg.MinTaskRows, 1), tp.len())
		}
	}
	if k == 1 {
		// A source of one task's rows at most: it may hold none the task would read.
		if !anyRow || tp.len() > 1 && knownEmpty() {
			p.empty.Inc()
			return 0, nil
		}
	}
	if k < tp.len() {
		p.regrouped.Inc()
	}
	return k, nil
}

// taskWire is push.Task as the tasks topic carries it, minus the job: every task of a job
// carries the same job, and encoding it for each task (its data and where compacted again each
// time) was 40% of the planner's CPU at 32 tasks per push. encodeTask splices the job, encoded
// once, into each task's encoding. TestPlannerTaskWire keeps taskWire in step with push.Task.
type taskWire struct {
	ID       string      `json:"id"`
	Job      *struct{}   `json:"job"` // always nil: the place encodeTask puts the job
	Source   push.Source `json:"source"`
	Channel  string      `json:"channel,omitempty"`
	BucketLo int         `json:"lo"`
	BucketHi int         `json:"hi"`
	IDKind   push.IDKind `json:"idKind,omitempty"`
	IDs      []string    `json:"ids,omitempty"`
	Rate     float64     `json:"rate,omitempty"`
	Of       int         `json:"of"`
}

// jobSlot is where taskWire's encoding holds the job. The id before it is a JSON string, in
// which a quote is always escaped, so the first match is the field.
var jobSlot = []byte(`,"job":null,`)

// encodeTask encodes t as json.Marshal(t) would, given jobJSON, the encoding of t.Job.
func encodeTask(t *push.Task, jobJSON []byte) ([]byte, error) {
	head, err := json.Marshal(&taskWire{
		ID: t.ID, Source: t.Source, Channel: t.Channel, BucketLo: t.BucketLo,
		BucketHi: t.BucketHi, IDKind: t.IDKind, IDs: t.IDs, Rate: t.Rate, Of: t.Of,
	})
	if err != nil {
		return nil, err
	}
	i := bytes.Index(head, jobSlot)
	if i < 0 {
		return nil, fmt.Errorf("BUG: no job field in %s", head)
	}
	out := make([]byte, 0, len(head)+len(jobJSON))
	out = append(out, head[:i+len(`,"job":`)]...)
	out = append(out, jobJSON...)
	return append(out, head[i+len(jobSlot)-1:]...), nil
}

func sourceOf(ts []push.Task) push.Source {
	if len(ts) == 0 {
		return ""
	}
	return ts[0].Source
}

// split picks the narrowest source for the job and cuts it into tasks. The error is the
// client-facing parse error of the where.
func (p *Planner) split(job *push.Job, buckets int) (taskPlan, error) {
	return splitPlan(p.cfg, job, buckets)
}

// splitJob is the planner's split, every range task built (the dry run's, see Audience).
func splitJob(cfg PlannerConfig, job *push.Job, buckets int) ([]push.Task, error) {
	tp, err := splitPlan(cfg, job, buckets)
	if err != nil {
		return nil, err
	}
	return tp.tasks(job, tp.len()), nil
}

// taskPlan is a job's split before its range tasks are built: their bucket spans in order, so
// that the planner builds only the tasks it runs (taskCount joins small ones; building each of
// the 32 ranges of a small push, the job copied into each, was a fifth of the process's
// allocations under intake load). Point tasks are built at once: they carry their ids.
type taskPlan struct {
	src        push.Source
	channel    string
	deviceType string      // the device type the where pins ("" none), which the scans narrow to
	spans      [][2]int    // range tasks: [lo, hi) of each
	points     []push.Task // point tasks
}

// len is how many tasks the plan has before any are joined.
func (tp *taskPlan) len() int {
	if tp.src == push.SourcePoint {
		return len(tp.points)
	}
	return len(tp.spans)
}

// tasks builds the plan's tasks, its ranges joined, in order, into k tasks of as equal a
// number of them as can be (k at least 1, at most len): the same buckets scanned in the same
// order, and the same (plan, k) gives the same ids. Point tasks are never joined.
func (tp *taskPlan) tasks(job *push.Job, k int) []push.Task {
	if tp.src == push.SourcePoint {
		return tp.points
	}
	n := len(tp.spans)
	k = min(max(k, 1), n)
	out := make([]push.Task, k)
	for i := range out {
		lo, hi := tp.spans[i*n/k][0], tp.spans[(i+1)*n/k-1][1]
		out[i] = push.Task{ID: rangeTaskID(job.ID, lo, hi), Job: *job, Source: tp.src, Channel: tp.channel, BucketLo: lo, BucketHi: hi}
	}
	return withRate(out, job.FlowControl)
}

// splitPlan is splitJob's plan.
func splitPlan(cfg PlannerConfig, job *push.Job, buckets int) (taskPlan, error) {
	if job.Kind == push.JobDevices {
		return taskPlan{src: push.SourcePoint, points: pointTasks(cfg, job, deviceKind(job.DeviceType, job.Vendor), job.DeviceIDs)}, nil
	}
	q, err := query.ParseAt(job.Where, job.QueryTime())
	if err != nil {
		return taskPlan{}, err
	}
	h := q.Hints()
	var (
		kind push.IDKind
		ids  []string
		have bool
	)
	for _, c := range []struct {
		kind push.IDKind
		ids  []string
	}{
		{kindObjectID, h.ObjectIDs}, {push.KindToken, h.DeviceTokens},
		{push.KindIID, h.InstallationIDs}, {push.KindRegID, h.RegistrationIDs},
	} {
		if c.ids != nil && (!have || len(c.ids) < len(ids)) {
			kind, ids, have = c.kind, c.ids, true
		}
	}
	if have {
		return taskPlan{src: push.SourcePoint, points: pointTasks(cfg, job, kind, ids)}, nil
	}
	tp := taskPlan{src: push.SourceBucket, deviceType: h.DeviceType}
	if len(h.Channels) > 0 {
		tp.src, tp.channel = push.SourceChannel, h.Channels[0]
	}
	span := min(cfg.BucketsPerTask, buckets)
	tp.spans = make([][2]int, 0, (buckets+span-1)/span)
	for lo := 0; lo < buckets; lo += span {
		tp.spans = append(tp.spans, [2]int{lo, min(lo+span, buckets)})
	}
	return tp, nil
}

func pointTasks(cfg PlannerConfig, job *push.Job, kind push.IDKind, ids []string) []push.Task {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var tasks []push.Task
	for i := 0; i < len(ids); i += cfg.IDsPerTask {
		chunk := ids[i:min(i+cfg.IDsPerTask, len(ids))]
		tasks = append(tasks, push.Task{
			ID: pointTaskID(job.ID, len(tasks)), Job: *job, Source: push.SourcePoint,
			IDKind: kind, IDs: chunk,
		})
	}
	return withRate(tasks, job.FlowControl)
}

func withRate(ts []push.Task, flow int) []push.Task {
	for i := range ts {
		ts[i].Of = len(ts)
		if flow > 0 {
			ts[i].Rate = float64(flow) / float64(len(ts))
		}
	}
	return ts
}

// deviceKind is the device-id index a devices push's ids are looked up in.
func deviceKind(deviceType, vendor string) push.IDKind {
	switch {
	case deviceType == push.DeviceIOS:
		return push.KindToken
	case vendor != "":
		return push.KindRegID
	default:
		return push.KindIID
	}
}

// appendReason adds reason to reasons unless present, keeping at most max.
func appendReason(reasons []string, reason string, max int) []string {
	if reason == "" || len(reasons) >= max || slices.Contains(reasons, reason) {
		return reasons
	}
	return append(reasons, reason)
}
