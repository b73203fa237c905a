package fanout

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// AudienceStore is what counting an audience reads: the planner's and the scan's reads, and
// no write.
type AudienceStore interface {
	scanStore
	GetApp(ctx context.Context, appID string) (push.App, error)
}

// Audience counts the targets a push would reach, per delivery channel, without sending or
// storing anything: the dry run of POST /1.1/push and /1.1/push/devices. It runs the real
// push's code: the planner's split (point ids, a channel's index, or every bucket), the where
// parsed at the job's query time with its sub-queries resolved, each task's scan with the
// residual filter (invalid and inactive installations skipped), the dead-token marks of listed
// ids, and the routing of each target to its channel (deliveryChannel). So a dry run and a real
// push started at the same instant over the same installations count the same targets.
//
// A count reads every row a real push would read, one task after the other on the caller's
// goroutine: the caller bounds it with ctx. Safe for concurrent use.
type Audience struct {
	cfg   PlannerConfig
	st    AudienceStore
	clock Clock
}

// NewAudience builds a counter that splits jobs as a planner with cfg does.
func NewAudience(cfg PlannerConfig, st AudienceStore) (*Audience, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Audience{cfg: cfg, st: st, clock: wallClock{}}, nil
}

// Count counts job's targets. job needs AppID, Kind, and Where (query jobs, channels merged in)
// or DeviceType, DeviceIDs, Vendor and DeviceProfile (devices jobs), and CreatedAt (or QueryAt),
// the instant its relative times count from. An error that is a *push.Error is the client's (a
// where that cannot be run); a deadline of ctx ends the count with ctx's error.
func (a *Audience) Count(ctx context.Context, job *push.Job) (push.Audience, error) {
	app, err := a.st.GetApp(ctx, job.AppID)
	if errors.Is(err, store.ErrNotFound) {
		return push.Audience{}, push.Errorf(push.CodeObjectNotFound, "app %s does not exist", job.AppID)
	}
	if err != nil {
		return push.Audience{}, fmt.Errorf("cannot read app %s for a dry run: %w", job.AppID, err)
	}
	js := &jobState{app: app, buckets: app.Settings.Buckets, policy: channelPolicy(job, &app)}
	if js.buckets <= 0 {
		js.buckets = push.DefaultBuckets
	}
	tasks, err := splitJob(a.cfg, job, js.buckets)
	if err != nil {
		return push.Audience{}, err
	}
	if job.Kind != push.JobDevices {
		q, err := jobQuery(ctx, a.st, job, js.buckets)
		if err != nil {
			return push.Audience{}, err
		}
		js.q = q
		js.hints = q.Hints()
	}
	var (
		tl   tally
		rows int64
	)
	for i := range tasks {
		// The store checks ctx every few thousand rows; small tasks are checked here.
		if err := ctx.Err(); err != nil {
			return push.Audience{}, fmt.Errorf("cannot finish a dry run of app %s: %w", job.AppID, err)
		}
		r := &run{t: &tasks[i], js: js, prog: &push.TaskProgress{}, size: math.MaxInt}
		s := scanner{r: r, st: a.st, clock: a.clock, b: &batch{}, counts: &tl}
		err := s.walk(ctx)
		rows += int64(s.rows)
		if err != nil {
			return push.Audience{}, fmt.Errorf("cannot count task %s of a dry run of app %s: %w", tasks[i].ID, job.AppID, err)
		}
	}
	return push.Audience{Channels: tl.counts(), Rows: rows}, nil
}
