package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
)

// Worker consumes push.tasks as a member of the fan-out group and runs each task: scan, filter,
// pace, send, checkpoint, complete.
type Worker struct {
	cfg WorkerConfig
	st  WorkerStore
	// progressNoSync and volumeNoSync are st's writes without an fsync of their own (nil: it
	// has none; volumeNoSync also with SyncEvery 0, which syncs every reservation).
	progressNoSync ProgressNoSync
	volumeNoSync   VolumeNoSync
	cons           Consumer
	snd            Sender
	logger         *zap.Logger
	clock          Clock
	sem            chan struct{}
	jobs           *jobCache
	pool           sync.Pool // *batch
	// newMessages builds a job's renderer (render.NewCache; tests may swap it).
	newMessages func(*push.Job) Messages
	m           workerMetrics
	mkm         marketingMetrics
	events      Events           // nil: no webhook events (SetEvents)
	presence    Presence         // nil: no own channel on this node (own_first goes to the vendor)
	gate        *cpuGate         // nil: no intake on this node, or BusyTasks 0 (SetIntake)
	inv         TokenInvalidator // nil: the sender deletes dead tokens' installations (SetInvalidator)
}

// Presence says which installations are connected to the own channel right now, as the
// gateways that own them know it (one node: its sender/direct.Core; a cluster: the
// connections the owning gateways record, sender/direct.Presence). own_first asks it once
// per batch for the batch's hybrid targets (docs/decisions.md, "Channel policy"): online[i]
// for iids[i]. An error sends the batch's own_first targets to their vendor.
type Presence interface {
	Online(ctx context.Context, appID string, iids []string, online []bool) error
}

// SetPresence gives the worker the own channel's presence; call it before Run.
func (w *Worker) SetPresence(p Presence) { w.presence = p }

// SetInvalidator makes the worker delete the installations of dead tokens itself, once the
// checkpoint (or the completion) that counts them is durable, instead of the sender at the
// gateway's answer (push.Delivery.InvalidateLater). Deleted before, an installation whose
// batch a crash sends again is not scanned again, and the record's devices and invalidTokens
// miss it. Call it before Run.
func (w *Worker) SetInvalidator(inv TokenInvalidator) { w.inv = inv }

type workerMetrics struct {
	tasksDone, tasksSkipped, tasksCancelled, tasksFailed, tasksInvalid *metrics.Counter
	rows, matched                                                      *metrics.Counter
	sent, failed, expired, invalidTokens                               *metrics.Counter
	batches, checkpoints, checkpointSyncs                              *metrics.Counter
	presenceErrors, intakeWaits, deadTokenErrors                       *metrics.Counter
	deferred, quotaFallbacks                                           *metrics.Counter
	inflight                                                           *metrics.Histogram
}

// NewWorker builds a worker over a store, the task log, and a sender.
func NewWorker(cfg WorkerConfig, st WorkerStore, cons Consumer, snd Sender, logger *zap.Logger, ms *metrics.Set) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.CheckpointEvery == 0 {
		cfg.CheckpointEvery = cfg.BatchSize
	}
	w := &Worker{
		cfg:    cfg,
		st:     st,
		cons:   cons,
		snd:    snd,
		logger: logger.Named("worker"),
		clock:  cfg.clock,
		sem:    make(chan struct{}, cfg.Concurrency),
		jobs:   newJobCache(64),
		newMessages: func(j *push.Job) Messages {
			return render.NewCache(j)
		},
	}
	if w.clock == nil {
		w.clock = wallClock{}
	}
	w.progressNoSync, _ = st.(ProgressNoSync)
	if cfg.SyncEvery > 0 {
		w.volumeNoSync, _ = st.(VolumeNoSync)
	}
	w.pool.New = func() any { return newBatch(cfg.BatchSize) }
	w.m = workerMetrics{
		tasksDone:       ms.NewCounter(`pushd_fanout_tasks_total{result="done"}`),
		tasksSkipped:    ms.NewCounter(`pushd_fanout_tasks_total{result="skipped"}`),
		tasksCancelled:  ms.NewCounter(`pushd_fanout_tasks_total{result="cancelled"}`),
		tasksFailed:     ms.NewCounter(`pushd_fanout_tasks_total{result="error"}`),
		tasksInvalid:    ms.NewCounter(`pushd_fanout_tasks_total{result="invalid"}`),
		rows:            ms.NewCounter(`pushd_fanout_rows_scanned_total`),
		matched:         ms.NewCounter(`pushd_fanout_targets_total`),
		sent:            ms.NewCounter(`pushd_fanout_deliveries_total{outcome="sent"}`),
		failed:          ms.NewCounter(`pushd_fanout_deliveries_total{outcome="failed"}`),
		expired:         ms.NewCounter(`pushd_fanout_deliveries_total{outcome="expired"}`),
		invalidTokens:   ms.NewCounter(`pushd_fanout_deliveries_total{outcome="invalid_token"}`),
		batches:         ms.NewCounter(`pushd_fanout_batches_total`),
		deferred:        ms.NewCounter(`pushd_fanout_deliveries_total{outcome="deferred"}`),
		quotaFallbacks:  ms.NewCounter(`pushd_fanout_quota_fallbacks_total`),
		checkpoints:     ms.NewCounter(`pushd_fanout_checkpoints_total`),
		checkpointSyncs: ms.NewCounter(`pushd_fanout_checkpoint_syncs_total`),
		presenceErrors:  ms.NewCounter(`pushd_fanout_presence_errors_total`),
		intakeWaits:     ms.NewCounter(`pushd_fanout_intake_waits_total`),
		deadTokenErrors: ms.NewCounter(`pushd_fanout_dead_token_errors_total`),
		inflight:        ms.NewHistogram(`pushd_fanout_batches_in_flight`),
	}
	w.mkm = newMarketingMetrics(ms)
	ms.NewGauge(`pushd_fanout_tasks_capacity`, func() float64 { return float64(cfg.Concurrency) })
	ms.NewGauge(`pushd_fanout_tasks_running`, func() float64 { return float64(len(w.sem)) })
	return w, nil
}

// Run consumes push.tasks until ctx ends. A task interrupted by the end of ctx checkpoints and
// leaves its offset uncommitted: whoever owns its partition next resumes it.
func (w *Worker) Run(ctx context.Context) error {
	return w.cons.Consume(ctx, queue.TopicTasks, queue.GroupFanout, w.handle)
}

func (w *Worker) handle(ctx context.Context, m queue.Message) error {
	var t push.Task
	if err := json.Unmarshal(m.Value, &t); err != nil || t.ID == "" || t.Job.ID == "" {
		w.m.tasksInvalid.Inc()
		w.logger.Error("dropping undecodable task", zap.Int(telemetry.KeyPartition, m.Partition),
			zap.Int64(telemetry.KeyOffset, m.Offset), zap.Error(err))
		return nil
	}
	return w.RunInline(ctx, &t, nil)
}

// RunInline runs t as handle runs a task it consumed: in one of the worker's Concurrency
// places, failures counted and logged. The planner calls it for a job planned as one task
// (PlannerConfig.InlineSingle).
func (w *Worker) RunInline(ctx context.Context, t *push.Task, fresh *FreshPlan) error {
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-w.sem }()
	h := &gateHold{g: w.gate}
	if err := h.enter(ctx); err != nil {
		return err
	}
	defer h.leave()
	err := w.runTask(ctx, t, h, fresh)
	if err != nil {
		w.m.tasksFailed.Inc()
		if ctx.Err() == nil {
			w.logger.Warn("task failed; it will be retried from its checkpoint",
				zap.String(telemetry.KeyJobID, t.Job.ID), zap.String(telemetry.KeyTaskID, t.ID), zap.Error(err))
		}
	}
	return err
}

// errCancelled ends a task whose push record was deleted or cancelled.
var errCancelled = errors.New("push cancelled")

// RunTask runs one task to its end: nil once its final progress and its counts on the record
// are written (the caller may then commit its offset), an error when it must be run again.
func (w *Worker) RunTask(ctx context.Context, t *push.Task) error {
	return w.runTask(ctx, t, nil, nil)
}

// runTask is RunTask with the task goroutine's place at the gate (nil: none).
func (w *Worker) runTask(ctx context.Context, t *push.Task, h *gateHold, fresh *FreshPlan) error {
	job := &t.Job
	if fresh != nil {
		return w.runFresh(ctx, t, h, fresh)
	}
	prog, err := w.st.GetTaskProgress(ctx, job.ID, t.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		prog = push.TaskProgress{JobID: job.ID, TaskID: t.ID}
	case err != nil:
		return fmt.Errorf("cannot read progress of task %s: %w", t.ID, err)
	case prog.Done:
		// Finished before: maybe the record update did not happen (crash in between).
		w.m.tasksSkipped.Inc()
		_, err := w.complete(ctx, t, prog.Counts, nil, "")
		return err
	}
	// The read's time is taken before it: a cancel that lands between the read and the run's
	// start must not be trusted away for a whole RecordCheck.
	recAt := w.clock.Now()
	rec, err := w.st.GetNotification(ctx, job.AppID, job.NotificationObjectID)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && rec.Status == push.StatusCancelled:
		w.m.tasksCancelled.Inc()
		return nil
	case err != nil:
		return fmt.Errorf("cannot read record %s of task %s: %w", job.NotificationObjectID, t.ID, err)
	}
	return w.runRead(ctx, t, h, prog, &rec, recAt)
}

// runFresh runs the task of a push the planner has just taken into its first plan
// (FreshPlan): with no progress, and the record the plan wrote, instead of reading both.
func (w *Worker) runFresh(ctx context.Context, t *push.Task, h *gateHold, fresh *FreshPlan) error {
	prog := push.TaskProgress{JobID: t.Job.ID, TaskID: t.ID}
	return w.runRead(ctx, t, h, prog, &fresh.Record, fresh.ReadAt)
}

// runRead runs t from prog, given its record rec as read at recAt.
func (w *Worker) runRead(ctx context.Context, t *push.Task, h *gateHold, prog push.TaskProgress, rec *push.Notification, recAt time.Time) error {
	job := &t.Job
	js, err := w.jobs.get(ctx, job.ID, func() (*jobState, error) { return w.buildJob(ctx, job) })
	var perr *push.Error
	if errors.As(err, &perr) {
		// The where cannot be run (a sub-query that excludes more installations than it may
		// read, say): running the task again cannot change that, so it ends now, with no
		// targets and the reason on the record, as the planner ends a push it cannot plan.
		w.logger.Warn("push cannot run its where", zap.String(telemetry.KeyTaskID, t.ID), zap.Error(err))
		prog.Done = true
		if err := w.st.PutTaskProgress(ctx, prog); err != nil {
			return fmt.Errorf("cannot write final progress of task %s: %w", t.ID, err)
		}
		_, err := w.complete(ctx, t, prog.Counts, []string{perr.Error()}, "")
		return err
	}
	if err != nil {
		return err
	}
	r := w.newRun(t, js, &prog, rec, recAt)
	r.hold = h
	err = r.run(ctx)
	_ = h.enter(ctx) // the completion's work; an error (ctx ended) only means without a token
	if errors.Is(err, errCancelled) {
		r.dropDead(ctx) // the task is not resumed: nothing will count them again
		w.m.tasksCancelled.Inc()
		return nil
	}
	if err != nil {
		// Keep what is final, so the retry resumes here. ctx may have ended (shutdown).
		if w.cfg.abrupt && ctx.Err() != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if cerr := r.checkpoint(cctx, true); cerr != nil {
			w.logger.Warn("cannot checkpoint an interrupted task", zap.String(telemetry.KeyTaskID, t.ID), zap.Error(cerr))
		}
		return err
	}
	counts := r.tl.counts()
	prog.Cursor = r.cursor
	prog.Counts = counts
	prog.Done = true
	// The final progress need not be fsynced on its own when the record update after it is
	// (ProgressNoSync): a crash that loses it loses the record update too, and the task
	// then resumes from its last checkpoint, as after a crash just before it.
	lazy := w.progressNoSync != nil
	put := w.st.PutTaskProgress
	if lazy {
		put = w.progressNoSync.PutTaskProgressNoSync
	}
	if err := put(ctx, prog); err != nil {
		return fmt.Errorf("cannot write final progress of task %s: %w", t.ID, err)
	}
	fpWorkerAfterFinal.Hit()
	// The last dead tokens go before the record says done, so that a push done has deleted
	// them. Each deletion is a synced write to this store, which makes the final progress
	// durable first when it was written without a sync of its own (ProgressNoSync): a crash
	// after a deletion repeats only the record step, with counts that include it.
	r.dropDead(ctx)
	applied, err := w.complete(ctx, t, counts, r.reasons, r.stopped)
	if err != nil {
		return err
	}
	if lazy && !applied {
		// Nothing synced after it (the record lists the task already, or is gone): the
		// offset commit must not be the only durable trace of the task's end.
		if err := w.st.PutTaskProgress(ctx, prog); err != nil {
			return fmt.Errorf("cannot write final progress of task %s: %w", t.ID, err)
		}
	}
	fpWorkerAfterComplete.Hit()
	w.m.tasksDone.Inc()
	return nil
}
