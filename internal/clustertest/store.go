package clustertest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// errNodeDown is what a killed node's store calls return.
var errNodeDown = errors.New("clustertest: node is down")

// gate decides whether a node's store calls go through: always while it runs, after a wait
// while it is paused, never once it is killed.
type gate struct {
	mu     sync.Mutex
	dead   bool
	paused chan struct{} // non-nil while paused; closed by resume
	// armed names the store call at which the node pauses itself next (PauseAt); hit is
	// closed when it does.
	armed string
	hit   chan struct{}
}

func newGate() *gate { return &gate{} }

func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	dead, paused := g.dead, g.paused
	g.mu.Unlock()
	if dead {
		return errNodeDown
	}
	if paused != nil {
		select {
		case <-paused:
		case <-ctx.Done():
			return ctx.Err()
		}
		if g.isDead() {
			return errNodeDown
		}
	}
	return nil
}

// passAt is pass for the store call named call: an armed pause at that call begins first.
func (g *gate) passAt(ctx context.Context, call string) error {
	g.mu.Lock()
	if g.armed == call && !g.dead {
		g.armed = ""
		if g.paused == nil {
			g.paused = make(chan struct{})
		}
		close(g.hit)
	}
	g.mu.Unlock()
	return g.pass(ctx)
}

func (g *gate) pauseAt(call string) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.hit = call, make(chan struct{})
	return g.hit
}

func (g *gate) isDead() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dead
}

func (g *gate) kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dead = true
	if g.paused != nil {
		close(g.paused)
		g.paused = nil
	}
}

func (g *gate) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused == nil && !g.dead {
		g.paused = make(chan struct{})
	}
}

func (g *gate) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused != nil {
		close(g.paused)
		g.paused = nil
	}
}

// gatedStore is a node's view of the shared store: the calls through which a node's roles
// make progress (scans, checkpoints, push records, daily volume, badges, schedules and
// leases) pass its gate. Other calls go straight through: they are reads or API writes of a
// node that the scenarios do not kill mid-request.
type gatedStore struct {
	store.Store
	g *gate
}

func (s *gatedStore) Scan(ctx context.Context, r store.ScanRange, fn func(*store.Row) error) error {
	if err := s.g.pass(ctx); err != nil {
		return err
	}
	return s.Store.Scan(ctx, r, func(row *store.Row) error {
		if err := s.g.pass(ctx); err != nil {
			return err
		}
		return fn(row)
	})
}

func (s *gatedStore) GetTaskProgress(ctx context.Context, jobID, taskID string) (push.TaskProgress, error) {
	if err := s.g.pass(ctx); err != nil {
		return push.TaskProgress{}, err
	}
	return s.Store.GetTaskProgress(ctx, jobID, taskID)
}

func (s *gatedStore) PutTaskProgress(ctx context.Context, p push.TaskProgress) error {
	if err := s.g.pass(ctx); err != nil {
		return err
	}
	return s.Store.PutTaskProgress(ctx, p)
}

func (s *gatedStore) UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error) {
	if err := s.g.pass(ctx); err != nil {
		return push.Notification{}, err
	}
	return s.Store.UpdateNotification(ctx, appID, objectID, fn)
}

func (s *gatedStore) IncrementBadges(ctx context.Context, appID string, buckets int, pushID string, objectIDs []string, badges []int64) error {
	if err := s.g.pass(ctx); err != nil {
		return err
	}
	return s.Store.IncrementBadges(ctx, appID, buckets, pushID, objectIDs, badges)
}

func (s *gatedStore) AddDailyVolume(ctx context.Context, appID, day string, n int64) (int64, error) {
	if err := s.g.pass(ctx); err != nil {
		return 0, err
	}
	return s.Store.AddDailyVolume(ctx, appID, day, n)
}

func (s *gatedStore) DueScheduled(ctx context.Context, before time.Time, limit int) ([]push.Scheduled, error) {
	if err := s.g.pass(ctx); err != nil {
		return nil, err
	}
	return s.Store.DueScheduled(ctx, before, limit)
}

func (s *gatedStore) ClaimScheduled(ctx context.Context, l store.Lease, appID string, id int64) error {
	if err := s.g.passAt(ctx, "ClaimScheduled"); err != nil {
		return err
	}
	return s.Store.ClaimScheduled(ctx, l, appID, id)
}

func (s *gatedStore) DeleteScheduled(ctx context.Context, appID string, id int64) error {
	if err := s.g.pass(ctx); err != nil {
		return err
	}
	return s.Store.DeleteScheduled(ctx, appID, id)
}

func (s *gatedStore) AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (store.Lease, bool, error) {
	if err := s.g.pass(ctx); err != nil {
		return store.Lease{}, false, err
	}
	return s.Store.AcquireLease(ctx, name, owner, now, ttl)
}

func (s *gatedStore) RenewLease(ctx context.Context, l store.Lease, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := s.g.pass(ctx); err != nil {
		return store.Lease{}, err
	}
	return s.Store.RenewLease(ctx, l, now, ttl)
}

func (s *gatedStore) ReleaseLease(ctx context.Context, l store.Lease) error {
	if err := s.g.pass(ctx); err != nil {
		return err
	}
	return s.Store.ReleaseLease(ctx, l)
}
