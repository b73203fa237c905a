package sender

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"
)

// MemberStore is where sending nodes count each other (store.Store implements it).
type MemberStore interface {
	RegisterMember(ctx context.Context, group, member string, now time.Time, ttl time.Duration) (live int, err error)
}

// MemberGroup is the group sending nodes register in: each takes 1/live of every configured
// rate (Config.Rates, an app's SenderRates), so the cluster sends at most the rate in total.
const MemberGroup = "sender"

// DefaultMemberTTL is how long a sending node counts as live after its last heartbeat. A
// node that dies leaves the others at a lower share for at most this long (safe: slower, not
// over the rate); a node that joins sends at a full share until the others' next heartbeat,
// a third of it: the cluster may go over a rate by one node's share for up to ttl/3.
const DefaultMemberTTL = 15 * time.Second

// Membership registers this node among the sending nodes and keeps its share of the
// cluster-wide rates. It is safe for concurrent use; Run heartbeats until ctx ends.
type Membership struct {
	st    MemberStore
	id    string
	ttl   time.Duration
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	log   *zap.Logger
	live  atomic.Int64

	beatErrors *metrics.Counter
}

// NewMembership returns the membership of node id (unique per process) with ttl (0: the
// default). now and sleep may be nil (the wall clock); set is where its metrics live
// (pushd_sender_live_nodes, pushd_sender_heartbeat_errors_total).
func NewMembership(st MemberStore, id string, ttl time.Duration, now func() time.Time, sleep func(context.Context, time.Duration) error, log *zap.Logger, set *metrics.Set) *Membership {
	if ttl <= 0 {
		ttl = DefaultMemberTTL
	}
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepFor
	}
	if log == nil {
		log = zap.NewNop()
	}
	if set == nil {
		set = metrics.NewSet()
	}
	m := &Membership{st: st, id: id, ttl: ttl, now: now, sleep: sleep, log: log.Named("membership"),
		beatErrors: set.GetOrCreateCounter(`pushd_sender_heartbeat_errors_total`)}
	m.live.Store(1)
	set.GetOrCreateGauge(`pushd_sender_live_nodes`, func() float64 { return float64(m.live.Load()) })
	return m
}

// Share is this node's part of a cluster-wide rate: 1/live, 1 before the first heartbeat.
func (m *Membership) Share() float64 {
	if m == nil {
		return 1
	}
	return 1 / float64(max(1, m.live.Load()))
}

// Beat registers this node once and updates its share.
func (m *Membership) Beat(ctx context.Context) error {
	n, err := m.st.RegisterMember(ctx, MemberGroup, m.id, m.now(), m.ttl)
	if err != nil {
		return fmt.Errorf("cannot register sending node %s: %w", m.id, err)
	}
	m.live.Store(int64(max(1, n)))
	return nil
}

// Run heartbeats every ttl/3 until ctx ends. A failed heartbeat keeps the last share (the
// store being down stops the sends too) and is logged.
func (m *Membership) Run(ctx context.Context) error {
	for {
		if err := m.Beat(ctx); err != nil && ctx.Err() == nil {
			m.beatErrors.Inc()
			m.log.Warn("heartbeat failed; keeping the last rate share", zap.Error(err))
		}
		if m.sleep(ctx, m.ttl/3) != nil {
			return nil
		}
	}
}

// sleepFor is the package's wall-clock sleep (a func value: the parameter above shadows it).
var sleepFor = sleep
