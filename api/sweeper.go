package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
)

// SweepStore is what the sweeper needs of the store.
type SweepStore interface {
	ListApps(ctx context.Context) ([]push.App, error)
	DeleteInactive(ctx context.Context, appID string, buckets int, cutoff time.Time, limit int) (int, error)
	// SweepNotifications removes up to limit push records of the app whose push finished
	// (done or cancelled) and that were created and last updated before cutoff, and says
	// how many; records of unfinished pushes stay however old.
	SweepNotifications(ctx context.Context, appID string, cutoff time.Time, limit int) (int, error)
}

// SweeperConfig configures the sweeper.
type SweeperConfig struct {
	Interval       time.Duration // between sweeps, default 1h
	InactiveAfter  time.Duration // default push.InactiveAfter (90 days)
	RecordsKeptFor time.Duration // after a push finished, default push.RecordRetention (7 days)
	Batch          int           // installations or records deleted per store call, default 1000
	// Leader, when set, gates each sweep: it runs only while Leader says this node holds the
	// sweeper's cluster lease (internal/lease), so that the cluster sweeps once.
	Leader func() bool
	// Now and After are the clock (defaults time.Now and time.After); tests inject both.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Swept counts what one sweep deleted.
type Swept struct {
	Installations int // not refreshed for InactiveAfter
	Records       int // push records RecordsKeptFor after their push finished
}

// Sweeper deletes, app by app and in batches, installations not refreshed for InactiveAfter
// and push records RecordsKeptFor after their push finished. It is a service (Run); one sweep
// never overlaps another.
type Sweeper struct {
	cfg     SweeperConfig
	st      SweepStore
	log     *zap.Logger
	deleted *metrics.Counter
	records *metrics.Counter
	errors  *metrics.Counter
	swept   chan Swept // test hook: receives each sweep's deletions when non-nil
}

// NewSweeper builds a sweeper.
func NewSweeper(cfg SweeperConfig, st SweepStore, log *zap.Logger, set *metrics.Set) *Sweeper {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Hour
	}
	if cfg.InactiveAfter <= 0 {
		cfg.InactiveAfter = push.InactiveAfter
	}
	if cfg.RecordsKeptFor <= 0 {
		cfg.RecordsKeptFor = push.RecordRetention
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
		records: set.GetOrCreateCounter(`pushd_sweeper_records_deleted_total`),
		errors:  set.GetOrCreateCounter(`pushd_sweeper_errors_total`),
	}
}

// SweepOnce deletes every installation of every app last updated before now-InactiveAfter,
// and every push record that finished before now-RecordsKeptFor, and says how many of each
// it deleted. An app that fails does not stop the others: their errors come back joined.
func (w *Sweeper) SweepOnce(ctx context.Context) (Swept, error) {
	var s Swept
	apps, err := w.st.ListApps(ctx)
	if err != nil {
		return s, fmt.Errorf("cannot list apps to sweep: %w", err)
	}
	now := w.cfg.Now()
	inactive, finished := now.Add(-w.cfg.InactiveAfter), now.Add(-w.cfg.RecordsKeptFor)
	var errs []error
	for _, app := range apps {
		n, err := w.batches(ctx, w.deleted, func(limit int) (int, error) {
			return w.st.DeleteInactive(ctx, app.ID, app.Settings.Buckets, inactive, limit)
		})
		s.Installations += n
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot sweep inactive installations of app %s: %w", app.ID, err))
		}
		n, err = w.batches(ctx, w.records, func(limit int) (int, error) {
			return w.st.SweepNotifications(ctx, app.ID, finished, limit)
		})
		s.Records += n
		if err != nil {
			errs = append(errs, fmt.Errorf("cannot sweep old push records of app %s: %w", app.ID, err))
		}
		if err := ctx.Err(); err != nil {
			return s, errors.Join(append(errs, err)...)
		}
	}
	return s, errors.Join(errs...)
}

// batches calls del with the batch size until it deletes less than a batch, counting into c.
func (w *Sweeper) batches(ctx context.Context, c *metrics.Counter, del func(limit int) (int, error)) (int, error) {
	total := 0
	for {
		n, err := del(w.cfg.Batch)
		total += n
		c.Add(n)
		if err != nil || n < w.cfg.Batch {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// Run sweeps at once, then every Interval, until ctx is cancelled; a sweep while another node
// holds the lease (Leader) is skipped.
func (w *Sweeper) Run(ctx context.Context) error {
	for {
		if w.cfg.Leader != nil && !w.cfg.Leader() {
			select {
			case <-ctx.Done():
				return nil
			case <-w.cfg.After(w.cfg.Interval):
			}
			continue
		}
		s, err := w.SweepOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.errors.Inc()
			w.log.Warn("sweep failed", zap.Error(err))
		}
		if s.Installations > 0 {
			w.log.Info("inactive installations deleted", zap.Int("deleted", s.Installations))
		}
		if s.Records > 0 {
			w.log.Info("old push records deleted", zap.Int("deleted", s.Records))
		}
		if w.swept != nil {
			select {
			case w.swept <- s:
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
