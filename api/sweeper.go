package api

import (
	"context"
	"fmt"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
)

// InactiveStore is what the sweeper needs of the store.
type InactiveStore interface {
	ListApps(ctx context.Context) ([]push.App, error)
	DeleteInactive(ctx context.Context, appID string, buckets int, cutoff time.Time, limit int) (int, error)
}

// SweeperConfig configures the inactivity sweeper.
type SweeperConfig struct {
	Interval      time.Duration // between sweeps, default 1h
	InactiveAfter time.Duration // default push.InactiveAfter (90 days)
	Batch         int           // installations deleted per store call, default 1000
	// Now and After are the clock (defaults time.Now and time.After); tests inject both.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Sweeper deletes installations not refreshed for InactiveAfter, app by app, in batches.
// It is a service (Run); one sweep never overlaps another.
type Sweeper struct {
	cfg     SweeperConfig
	st      InactiveStore
	log     *zap.Logger
	deleted *metrics.Counter
	errors  *metrics.Counter
	swept   chan int // test hook: receives each sweep's deletions when non-nil
}

// NewSweeper builds a sweeper.
func NewSweeper(cfg SweeperConfig, st InactiveStore, log *zap.Logger, set *metrics.Set) *Sweeper {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Hour
	}
	if cfg.InactiveAfter <= 0 {
		cfg.InactiveAfter = push.InactiveAfter
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if log == nil {
		log = zap.NewNop()
	}
	if set == nil {
		set = metrics.NewSet()
	}
	return &Sweeper{
		cfg:     cfg,
		st:      st,
		log:     log.Named("sweeper"),
		deleted: set.GetOrCreateCounter(`pushd_sweeper_deleted_total`),
		errors:  set.GetOrCreateCounter(`pushd_sweeper_errors_total`),
	}
}

// SweepOnce deletes every installation of every app last updated before now-InactiveAfter
// and says how many it deleted.
func (w *Sweeper) SweepOnce(ctx context.Context) (int, error) {
	apps, err := w.st.ListApps(ctx)
	if err != nil {
		return 0, fmt.Errorf("cannot list apps to sweep: %w", err)
	}
	cutoff := w.cfg.Now().Add(-w.cfg.InactiveAfter)
	total := 0
	for _, app := range apps {
		for {
			n, err := w.st.DeleteInactive(ctx, app.ID, app.Settings.Buckets, cutoff, w.cfg.Batch)
			total += n
			w.deleted.Add(n)
			if err != nil {
				return total, fmt.Errorf("cannot sweep inactive installations of app %s: %w", app.ID, err)
			}
			if n < w.cfg.Batch {
				break
			}
		}
	}
	return total, nil
}

// Run sweeps at once, then every Interval, until ctx is cancelled.
func (w *Sweeper) Run(ctx context.Context) error {
	for {
		n, err := w.SweepOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.errors.Inc()
			w.log.Warn("sweep failed", zap.Error(err))
		} else if n > 0 {
			w.log.Info("inactive installations deleted", zap.Int("deleted", n))
		}
		if w.swept != nil {
			select {
			case w.swept <- n:
			case <-ctx.Done():
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.cfg.After(w.cfg.Interval):
		}
	}
}
