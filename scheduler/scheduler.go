// Package scheduler fires due scheduled pushes exactly once, and re-drives the jobs whose
// append to the log was lost (Redriver). A scheduled push is a stored push.Scheduled holding
// its complete job; firing writes the job into the push record (in-queue), appends it to the
// push.jobs log and then removes the schedule. A crash in between fires it again at the next
// start; the job keeps its id, and fan-out does not plan a job id twice, so the push is sent
// once. A push whose time passed while the server was down fires at the first tick after start.
//
// In a cluster every scheduler node runs one, under the lease "scheduler" (internal/lease): only
// the holder looks for due pushes, and each firing first claims its schedule under the lease
// (store.Store.ClaimScheduled), which the store refuses once the lease has passed to another
// tenure, and confirms the claim again right before the job's append. A holder that pauses
// past its lease's expiry, while another node takes the lease over, wakes up to a refused claim
// or confirmation and fires nothing: a push fires once. Only a pause between the confirmation
// and the job's append lets two nodes append the same job (the log cannot be fenced); its id is
// the same, and the planner plans a job id once.
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
	ClaimScheduled(ctx context.Context, l store.Lease, appID string, id int64) error
	DeleteScheduled(ctx context.Context, appID string, id int64) error
	UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error)
}

// Log is where fired jobs go.
type Log interface {
	Partitions(topic string) int
	Append(ctx context.Context, topic string, recs ...queue.Record) error
}

// Lease says whether this node holds the scheduler's lease, and under which epoch
// (lease.Keeper).
type Lease interface {
	Held() (store.Lease, bool)
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
	lease Lease

	fired  *metrics.Counter
	fenced *metrics.Counter

	beforeClaim func(*push.Scheduled) // test hook: runs after the lease check, before the claim
	afterClaim  func(*push.Scheduled) // test hook: runs after the claim
	// test hook: runs after the record's write, before the claim's confirmation
	beforeConfirm func(*push.Scheduled)
}

// New returns a scheduler firing under lease; now may be nil (time.Now).
func New(cfg Config, st Store, lg Log, lease Lease, zl *zap.Logger, set *metrics.Set, now func() time.Time) *Scheduler {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	return &Scheduler{
		cfg: cfg, store: st, log: lg, lease: lease, zl: zl.Named("scheduler"), now: now,
		fired:  set.GetOrCreateCounter(`pushd_scheduler_fired_total`),
		fenced: set.GetOrCreateCounter(`pushd_scheduler_fenced_total`),
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

// Tick fires every push due at the current time, while this node holds the lease, and says how
// many it fired. A claim refused for a later epoch ends the tick without an error: the lease
// has passed to another node.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	l, ok := s.lease.Held()
	if !ok {
		return 0, nil
	}
	n := 0
	for {
		due, err := s.store.DueScheduled(ctx, s.now(), s.cfg.Batch)
		if err != nil {
			return n, fmt.Errorf("cannot list due scheduled pushes: %w", err)
		}
		for i := range due {
			if now, ok := s.lease.Held(); !ok || now.Epoch != l.Epoch {
				return n, nil // lost meanwhile: the next holder fires the rest
			}
			fired, err := s.fire(ctx, &due[i], l)
			if errors.Is(err, store.ErrLeaseLost) {
				s.fenced.Inc()
				s.zl.Warn("a later lease holder took a firing over: this node stops firing",
					zap.String("app_id", due[i].AppID), zap.Int64("scheduled_id", due[i].ID), zap.Int64("epoch", l.Epoch))
				return n, nil
			}
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

// fire claims the schedule under lease l, moves the record in-queue holding the job, confirms
// the claim, appends the job, then removes the schedule. A schedule gone (fired or cancelled)
// is skipped; a claim refused because the lease passed to another tenure returns
// store.ErrLeaseLost and writes nothing, and a confirmation refused so returns it before the
// append: a holder that pauses after its claim and wakes after the lease moved does not append
// the job the new holder fires (only a pause between the confirmation and the append can).
// A crash before the removal fires the schedule again at the next tick: the record already
// holds the job then, and the same job (same QueryAt) is appended again, unless the planner
// took it already, when only the schedule is removed.
func (s *Scheduler) fire(ctx context.Context, sp *push.Scheduled, l store.Lease) (bool, error) {
	if s.beforeClaim != nil {
		s.beforeClaim(sp)
	}
	switch err := s.store.ClaimScheduled(ctx, l, sp.AppID, sp.ID); {
	case errors.Is(err, store.ErrNotFound):
		return false, nil // fired by an earlier holder, or cancelled
	case errors.Is(err, store.ErrLeaseLost):
		return false, err
	case err != nil:
		return false, fmt.Errorf("cannot claim scheduled push %d of app %s: %w", sp.ID, sp.AppID, err)
	}
	if s.afterClaim != nil {
		s.afterClaim(sp)
	}
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
	if s.beforeConfirm != nil {
		s.beforeConfirm(sp)
	}
	if appendJob {
		// The log cannot be fenced: confirm the claim, under the same tenure, right before.
		switch err := s.store.ClaimScheduled(ctx, l, sp.AppID, sp.ID); {
		case errors.Is(err, store.ErrNotFound):
			return false, nil // fired meanwhile by a later holder
		case errors.Is(err, store.ErrLeaseLost):
			return false, err
		case err != nil:
			return false, fmt.Errorf("cannot confirm the claim of scheduled push %d of app %s: %w", sp.ID, sp.AppID, err)
		}
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
