// Package scheduler fires due scheduled pushes exactly once, and re-drives the jobs whose
// append to the log was lost (Redriver). A scheduled push is a stored push.Scheduled holding
// its complete job; firing writes the job into the push record (in-queue), appends it to the
// push.jobs log and then removes the schedule. A crash in between fires it again at the next
// start; the job keeps its id, and fan-out does not plan a job id twice, so the push is sent
// once. A push whose time passed while the server was down fires at the first tick after start.
//
// One Scheduler runs per process; in a cluster it would run under a lease (CLUSTER.md).
package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
)

// Store is what the scheduler reads and writes.
type Store interface {
	DueScheduled(ctx context.Context, before time.Time, limit int) ([]push.Scheduled, error)
	DeleteScheduled(ctx context.Context, appID string, id int64) error
	UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error)
}

// Log is where fired jobs go.
type Log interface {
	Partitions(topic string) int
	Append(ctx context.Context, topic string, recs ...queue.Record) error
}

// Config tunes the scheduler.
type Config struct {
	Interval time.Duration // how often due pushes are looked for; default 1s
	Batch    int           // due pushes fired per look; default 100
}

func (c *Config) defaults() {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
}

// Scheduler fires due pushes.
type Scheduler struct {
	cfg   Config
	store Store
	log   Log
	zl    *zap.Logger
	now   func() time.Time

	fired *metrics.Counter
}

// New returns a scheduler; now may be nil (time.Now).
func New(cfg Config, st Store, lg Log, zl *zap.Logger, set *metrics.Set, now func() time.Time) *Scheduler {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	return &Scheduler{
		cfg: cfg, store: st, log: lg, zl: zl.Named("scheduler"), now: now,
		fired: set.GetOrCreateCounter(`pushd_scheduler_fired_total`),
	}
}

// Run fires due pushes every Interval until ctx is cancelled.
func (s *Scheduler) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.zl.Warn("cannot fire due scheduled pushes", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Tick fires every push due at the current time and says how many it fired.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	n := 0
	for {
		due, err := s.store.DueScheduled(ctx, s.now(), s.cfg.Batch)
		if err != nil {
			return n, fmt.Errorf("cannot list due scheduled pushes: %w", err)
		}
		for i := range due {
			fired, err := s.fire(ctx, &due[i])
			if err != nil {
				return n, err
			}
			if fired {
				n++
			}
		}
		if len(due) < s.cfg.Batch {
			return n, nil
		}
	}
}

// The scheduler's fault points (internal/faultpoint), between the writes of a firing: the
// record (in-queue, holding the job), the job's append, the schedule's removal.
var (
	fpAfterRecord = faultpoint.Define("scheduler/after-record")
	fpAfterJob    = faultpoint.Define("scheduler/after-job")
)

// errNoWrite aborts a record update that has nothing to write.
var errNoWrite = errors.New("record needs no update")

// fire moves the record in-queue holding the job, appends the job, then removes the schedule.
// A crash before the removal fires the schedule again at the next tick: the record already
// holds the job then, and the same job (same QueryAt) is appended again, unless the planner
// took it already, when only the schedule is removed.
func (s *Scheduler) fire(ctx context.Context, sp *push.Scheduled) (bool, error) {
	var (
		job       push.Job
		appendJob bool
	)
	now := s.now().UTC()
	_, err := s.store.UpdateNotification(ctx, sp.AppID, sp.Job.NotificationObjectID, func(n *push.Notification) error {
		job, appendJob = sp.Job, true
		switch {
		case n.Status == push.StatusScheduled:
			job.QueryAt = now // "7 days ago" in its where means before it fired
			pj := job
			n.Status, n.PendingJob, n.PendingBy = push.StatusInQueue, &pj, ""
			n.UpdatedAt = now
			return nil
		case n.Status == push.StatusInQueue && n.PendingJob != nil:
			job = *n.PendingJob // fired before a crash: the same job again
		case n.Status == push.StatusInQueue:
			job.QueryAt = now // a record written before records held their job
		default:
			appendJob = false // the planner took the job: only the schedule is left
		}
		return errNoWrite
	})
	if errors.Is(err, store.ErrNotFound) {
		// The record was deleted: the push was cancelled. Drop the schedule.
		if err := s.store.DeleteScheduled(ctx, sp.AppID, sp.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, fmt.Errorf("cannot drop cancelled scheduled push %d of app %s: %w", sp.ID, sp.AppID, err)
		}
		return false, nil
	}
	if err != nil && !errors.Is(err, errNoWrite) {
		return false, fmt.Errorf("cannot mark scheduled push %d of app %s in queue: %w", sp.ID, sp.AppID, err)
	}
	fpAfterRecord.Hit()
	if appendJob {
		body, err := json.Marshal(&job)
		if err != nil {
			return false, fmt.Errorf("BUG: cannot encode job %s: %w", job.ID, err)
		}
		rec := queue.Record{
			Partition: queue.PartitionForKey([]byte(job.AppID), s.log.Partitions(queue.TopicJobs)),
			Key:       []byte(job.AppID),
			Value:     body,
		}
		if err := s.log.Append(ctx, queue.TopicJobs, rec); err != nil {
			return false, fmt.Errorf("cannot append job of scheduled push %d of app %s: %w", sp.ID, sp.AppID, err)
		}
	}
	fpAfterJob.Hit()
	if err := s.store.DeleteScheduled(ctx, sp.AppID, sp.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, fmt.Errorf("cannot remove fired scheduled push %d of app %s: %w", sp.ID, sp.AppID, err)
	}
	s.fired.Inc()
	s.zl.Info("scheduled push fired", zap.String("app_id", sp.AppID), zap.Int64("scheduled_id", sp.ID), zap.String("job_id", job.ID))
	return true, nil
}
