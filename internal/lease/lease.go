// Package lease keeps one node's hold on a named store lease (store.Lease): a Keeper acquires
// the lease when it is free, renews it while it holds it, releases it on stop, and tells the
// work that must run once per cluster (the scheduler, the re-driver, the sweepers) whether this
// node holds it now and under which epoch.
//
// Holding is judged at the node's own clock: a node believes it holds the lease until its
// Expires, and a paused node may believe so too long. That is why the writes made under a lease
// carry it and the store refuses them once the lease has another tenure
// (store.Store.ClaimScheduled): the clock decides who works, the epoch keeps a late worker from
// doing harm.
//
// Concurrency: a Keeper's methods are safe for concurrent use; Run is its only writer.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/store"
)

// Store is what a Keeper needs of the store.
type Store interface {
	AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (store.Lease, bool, error)
	RenewLease(ctx context.Context, l store.Lease, now time.Time, ttl time.Duration) (store.Lease, error)
	ReleaseLease(ctx context.Context, l store.Lease) error
}

// Config tunes every lease of a node.
type Config struct {
	// TTL is how long a lease lasts unrenewed: how long the work stops when its holder dies
	// without releasing it. Default 15s.
	TTL time.Duration
	// Renew is the period of renewals, and of acquisition attempts by nodes that do not hold
	// the lease. Default 5s: two renewals may fail before the lease runs out.
	Renew time.Duration
}

// Defaults of Config.
const (
	DefaultTTL   = 15 * time.Second
	DefaultRenew = 5 * time.Second
)

// RegisterFlags registers the config as prefix+"ttl" and prefix+"renew" with their defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.DurationVar(&c.TTL, prefix+"ttl", DefaultTTL, "how long a cluster lease (scheduler, sweepers) lasts unrenewed: how long that work pauses when its node dies")
	fs.DurationVar(&c.Renew, prefix+"renew", DefaultRenew, "period of the renewals of a held lease and of the attempts to acquire a free one; less than half the TTL")
}

// Validate reports a config that cannot hold a lease.
func (c Config) Validate() error {
	c.defaults()
	if c.Renew*2 > c.TTL {
		return fmt.Errorf("cannot renew leases every %v with a TTL of %v: renew at most every TTL/2, so that one failed renewal does not lose the lease", c.Renew, c.TTL)
	}
	return nil
}

func (c *Config) defaults() {
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.Renew <= 0 {
		c.Renew = DefaultRenew
	}
}

// Owner returns a name for this process as a lease owner: host, pid and a random part, so that
// a restarted process (same host and pid in a container) is a new owner.
func Owner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "pushd"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Keeper holds one named lease for one owner.
type Keeper struct {
	name, owner string
	cfg         Config
	st          Store
	zl          *zap.Logger
	now         func() time.Time

	mu   sync.Mutex
	cur  store.Lease
	held bool

	acquisitions *metrics.Counter
	lost         *metrics.Counter
}

// New returns a keeper of lease name for owner; now may be nil (time.Now).
func New(name, owner string, cfg Config, st Store, zl *zap.Logger, set *metrics.Set, now func() time.Time) *Keeper {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	k := &Keeper{
		name: name, owner: owner, cfg: cfg, st: st, now: now,
		zl:           zl.Named("lease").With(zap.String("lease", name), zap.String("owner", owner)),
		acquisitions: set.GetOrCreateCounter(fmt.Sprintf(`pushd_lease_acquisitions_total{lease=%q}`, name)),
		lost:         set.GetOrCreateCounter(fmt.Sprintf(`pushd_lease_lost_total{lease=%q}`, name)),
	}
	set.GetOrCreateGauge(fmt.Sprintf(`pushd_lease_held{lease=%q}`, name), func() float64 {
		if _, ok := k.Held(); ok {
			return 1
		}
		return 0
	})
	set.GetOrCreateGauge(fmt.Sprintf(`pushd_lease_epoch{lease=%q}`, name), func() float64 {
		l, _ := k.Held()
		return float64(l.Epoch)
	})
	return k
}

// Name is the lease's name.
func (k *Keeper) Name() string { return k.name }

// Held returns the lease and true while this node holds it by its clock; the zero lease and
// false otherwise.
func (k *Keeper) Held() (store.Lease, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.held || !k.now().Before(k.cur.Expires) {
		return store.Lease{}, false
	}
	return k.cur, true
}

// Leader says whether this node holds the lease now: the gate of work without writes to fence.
func (k *Keeper) Leader() bool {
	_, ok := k.Held()
	return ok
}

// Run tries to hold the lease every Renew until ctx is cancelled, then releases it.
func (k *Keeper) Run(ctx context.Context) error {
	t := time.NewTicker(k.cfg.Renew)
	defer t.Stop()
	for {
		k.Step(ctx)
		select {
		case <-ctx.Done():
			k.release()
			return nil
		case <-t.C:
		}
	}
}

// Step renews the lease if this node holds it, else tries to acquire it: one round of Run.
func (k *Keeper) Step(ctx context.Context) {
	now := k.now()
	k.mu.Lock()
	cur, held := k.cur, k.held && now.Before(k.cur.Expires)
	k.mu.Unlock()
	if held {
		l, err := k.st.RenewLease(ctx, cur, now, k.cfg.TTL)
		switch {
		case err == nil:
			k.set(l, true)
			return
		case errors.Is(err, store.ErrLeaseLost):
			k.lost.Inc()
			k.zl.Warn("lease lost to a later epoch", zap.Int64("epoch", cur.Epoch), zap.String("holder", l.Owner), zap.Int64("holder_epoch", l.Epoch))
			k.set(store.Lease{}, false)
		default:
			// Held until it expires by this clock; the next round tries again.
			if ctx.Err() == nil {
				k.zl.Warn("cannot renew lease", zap.Int64("epoch", cur.Epoch), zap.Error(err))
			}
			return
		}
	} else if k.wasHeld() {
		k.lost.Inc()
		k.zl.Warn("lease expired before its renewal", zap.Int64("epoch", cur.Epoch))
		k.set(store.Lease{}, false)
	}
	l, ok, err := k.st.AcquireLease(ctx, k.name, k.owner, now, k.cfg.TTL)
	if err != nil {
		if ctx.Err() == nil {
			k.zl.Warn("cannot acquire lease", zap.Error(err))
		}
		return
	}
	if ok {
		k.acquisitions.Inc()
		k.zl.Info("lease acquired", zap.Int64("epoch", l.Epoch), zap.Time("expires", l.Expires))
	}
	k.set(l, ok)
}

func (k *Keeper) wasHeld() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.held
}

func (k *Keeper) set(l store.Lease, held bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cur, k.held = l, held
}

// release frees the lease, if held, for another node to take at once instead of at its expiry.
func (k *Keeper) release() {
	l, ok := k.Held()
	k.set(store.Lease{}, false)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.st.ReleaseLease(ctx, l); err != nil {
		k.zl.Warn("cannot release lease", zap.Int64("epoch", l.Epoch), zap.Error(err))
		return
	}
	k.zl.Info("lease released", zap.Int64("epoch", l.Epoch))
}

// Start makes the first attempt to hold the lease (service.Starter), so that the work started
// after the keeper finds the lease held from its first round.
func (k *Keeper) Start(ctx context.Context) error {
	k.Step(ctx)
	return nil
}
