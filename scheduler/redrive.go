package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
)

// RedriveStore is what the re-driver reads.
type RedriveStore interface {
	ListApps(ctx context.Context) ([]push.App, error)
	PendingJobs(ctx context.Context, appID string, before time.Time, limit int) ([]push.Notification, error)
}

// RedriveConfig tunes the re-driver.
type RedriveConfig struct {
	// After is how long a record may hold a job the planner has not taken before the job is
	// appended again: longer than the API's write timeout (10s) and than the planner's usual
	// lag, or a push being accepted, or merely queued, gets a second job (harmless: planned
	// once, its tasks redelivered). Default 1 minute.
	After time.Duration
	// Batch is how many pending jobs of one app one look reads; default 100.
	Batch int
}

// DefaultRedriveAfter is RedriveConfig.After's default: a lost push goes out at most about a
// minute and a half late (After plus half of it between looks), and the planner, which takes a
// job within milliseconds, is far from lagging that much before anything else is wrong.
const DefaultRedriveAfter = time.Minute

func (c *RedriveConfig) defaults() {
	if c.After <= 0 {
		c.After = DefaultRedriveAfter
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
}

// maxRedriveDoublings caps the back-off between re-drives of one record (After·2^6 at most):
// while the planner is down, its jobs are not appended every look.
const maxRedriveDoublings = 6

// Redriver appends again the job of every push record that has held it (push.Notification.
// PendingJob) for longer than After: the job's append was lost (a crash between the record's
// write and the append), or the planner is not consuming. Any number of re-drivers may run:
// the planner plans a job id once; in a cluster it runs under the scheduler's lease, on the node
// that fires, so that a lost job is appended once, not once per scheduler node. It keeps, per
// record it re-drove, when it may again, in memory, for the records still pending.
type Redriver struct {
	cfg   RedriveConfig
	store RedriveStore
	log   Log
	lease Lease // nil: always
	zl    *zap.Logger
	now   func() time.Time

	next map[string]redriven // by app id + "\x00" + object id; used by Tick only

	redrivenJobs *metrics.Counter
}

type redriven struct {
	at    time.Time // not before
	times int
}

// NewRedriver returns a re-driver that looks only while lease is held (nil: always); now may
// be nil (time.Now).
func NewRedriver(cfg RedriveConfig, st RedriveStore, lg Log, lease Lease, zl *zap.Logger, set *metrics.Set, now func() time.Time) *Redriver {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	return &Redriver{
		cfg: cfg, store: st, log: lg, lease: lease, zl: zl.Named("redriver"), now: now,
		next:         make(map[string]redriven),
		redrivenJobs: set.GetOrCreateCounter(`pushd_scheduler_jobs_redriven_total`),
	}
}

// Run looks for lost jobs every After/2 until ctx is cancelled.
func (r *Redriver) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.After / 2)
	defer t.Stop()
	for {
		if _, err := r.Tick(ctx); err != nil && ctx.Err() == nil {
			r.zl.Warn("cannot re-drive pending jobs", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Tick appends the job of every record pending since before now−After, and says how many;
// nothing while another node holds the lease.
func (r *Redriver) Tick(ctx context.Context) (int, error) {
	if r.lease != nil {
		if _, ok := r.lease.Held(); !ok {
			return 0, nil
		}
	}
	apps, err := r.store.ListApps(ctx)
	if err != nil {
		return 0, fmt.Errorf("cannot list apps for pending jobs: %w", err)
	}
	now := r.now()
	seen := make(map[string]bool)
	n := 0
	for i := range apps {
		recs, err := r.store.PendingJobs(ctx, apps[i].ID, now.Add(-r.cfg.After), r.cfg.Batch)
		if err != nil {
			return n, err
		}
		for j := range recs {
			rec := &recs[j]
			key := rec.AppID + "\x00" + rec.ObjectID
			seen[key] = true
			prev, ok := r.next[key]
			if ok && now.Before(prev.at) {
				continue
			}
			if err := r.append(ctx, rec.PendingJob); err != nil {
				return n, err
			}
			r.next[key] = redriven{at: now.Add(r.cfg.After << min(prev.times, maxRedriveDoublings)), times: prev.times + 1}
			r.redrivenJobs.Inc()
			n++
			r.zl.Warn("re-drove a job the planner had not taken", zap.String("app_id", rec.AppID),
				zap.String("job_id", rec.PendingJob.ID), zap.Time("pending_since", rec.PendingSince()), zap.Int("times", prev.times+1))
		}
	}
	for k := range r.next {
		if !seen[k] {
			delete(r.next, k)
		}
	}
	return n, nil
}

func (r *Redriver) append(ctx context.Context, job *push.Job) error {
	body, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("BUG: cannot encode job %s: %w", job.ID, err)
	}
	rec := queue.Record{
		Partition: queue.PartitionForKey([]byte(job.AppID), r.log.Partitions(queue.TopicJobs)),
		Key:       []byte(job.AppID),
		Value:     body,
	}
	if err := r.log.Append(ctx, queue.TopicJobs, rec); err != nil {
		return fmt.Errorf("cannot re-drive job %s of app %s: %w", job.ID, job.AppID, err)
	}
	return nil
}
