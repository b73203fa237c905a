package direct

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/webhook"
)

// fpAfterCache is between a message's cache write (and count) and its offset's commit.
var fpAfterCache = faultpoint.Define("direct/after-cache")

// Cache is the offline cache the core keeps (store.Store implements it).
type Cache interface {
	CacheDirect(ctx context.Context, msg push.DirectMessage, now time.Time, limit int) (push.CacheOutcome, int, error)
	OfflineMessages(ctx context.Context, appID, installationID string, now time.Time) ([]push.DirectMessage, error)
	AckDirect(ctx context.Context, appID, installationID string, ids []string, now time.Time) (int, error)
}

// Consumer consumes push.direct (queue/embedded, queue/kafka).
type Consumer interface {
	Consume(ctx context.Context, topic, group string, h queue.Handler) error
}

// assigningConsumer is a log whose consumer is told the partitions it owns (queue/kafka):
// what a cluster's gateway consumes with (Core.Cluster).
type assigningConsumer interface {
	ConsumeAssigned(ctx context.Context, topic, group string, h queue.Handler, assigned func(partitions []int)) error
}

// ErrMoved refuses to attach a device whose push.direct partition this node does not own
// (Core.Cluster): the codec closes it with CloseMoved, and the device asks the router again.
var ErrMoved = errors.New("the installation's partition belongs to another gateway node")

// Session is one connected device as a codec serves it.
type Session interface {
	// Deliver writes msgs to the device in order, within the codec's write deadline.
	Deliver(msgs []push.DirectMessage) error
	// Close ends the connection, telling the device code and reason where the codec can.
	Close(code int, reason string)
}

// devKey names one installation.
type devKey struct{ app, iid string }

// attached is a live session and the lock that orders writes to it: the flush of the offline
// cache on connect, then live messages.
type attached struct {
	s  Session
	mu sync.Mutex
	// flushed holds the ids the connect's flush wrote (guarded by mu): a message cached just
	// before the flush read the cache is in it, and its live write is skipped instead of
	// sending it twice. One device's messages come in order from one partition, so the first
	// live message not in it ends the need for it.
	flushed map[string]struct{}
}

// Core is the codec-neutral delivery core. See the package doc.
type Core struct {
	cfg   Config
	cache Cache
	log   *zap.Logger
	now   func() time.Time
	m     *coreMetrics

	mu       sync.Mutex
	sessions map[devKey]*attached
	// leaving counts the detached sessions whose disconnect is not recorded yet (guarded by
	// mu): the presence endpoint reads them as disconnecting now, not as a connection that
	// vanished without a trace.
	leaving map[devKey]int
	// parts is push.direct's partition count in a cluster (Cluster), 0 on one node; owned
	// tells the partitions this node consumes (guarded by mu). A device is served only by the
	// owner of its installation's partition.
	parts int
	owned []bool
	// changed is signalled (capacity 1) when owned changes: the Advertiser advertises again.
	changed chan struct{}

	// afterAttach, set by tests only, runs in Attach between registering the session and
	// reading the offline cache.
	afterAttach func()

	events Events // nil: no webhook events (SetEvents)
	// presence, when set, records connects, disconnects and acks for the presence endpoint
	// (SetPresence); node is this gateway's name there.
	presence PresenceStore
	node     string
}

// PresenceStore records a device's own-channel presence: on connect, disconnect and ack,
// never per message (store/pebble implements it).
type PresenceStore interface {
	DeviceOnline(ctx context.Context, app, iid, node string, at time.Time) error
	DeviceOffline(ctx context.Context, app, iid, node string, at time.Time) error
	DeviceAcked(ctx context.Context, app, iid string, at time.Time) error
}

// SetPresence makes the core record presence in ps as node; call it before devices connect.
func (c *Core) SetPresence(ps PresenceStore, node string) { c.presence, c.node = ps, node }

// Node is this gateway's name in the presence records.
func (c *Core) Node() string { return c.node }

type coreMetrics struct {
	connected  *metrics.Gauge
	cached     *metrics.Counter
	duplicates *metrics.Counter
	cancelled  *metrics.Counter
	expired    *metrics.Counter
	dropped    *metrics.Counter
	written    *metrics.Counter
	writeFails *metrics.Counter
	acked      *metrics.Counter
	bad        *metrics.Counter
	moved      *metrics.Counter
}

// NewCore builds the core.
func NewCore(cfg Config, cache Cache, log *zap.Logger, set *metrics.Set) *Core {
	c := &Core{cfg: cfg.WithDefaults(), cache: cache, log: log.Named("direct"), now: time.Now, sessions: map[devKey]*attached{}, leaving: map[devKey]int{},
		changed: make(chan struct{}, 1)}
	c.m = &coreMetrics{
		cached:     set.NewCounter(`pushd_direct_messages_total{result="cached"}`),
		duplicates: set.NewCounter(`pushd_direct_messages_total{result="duplicate"}`),
		cancelled:  set.NewCounter(`pushd_direct_messages_total{result="cancelled"}`),
		expired:    set.NewCounter(`pushd_direct_messages_total{result="expired"}`),
		bad:        set.NewCounter(`pushd_direct_messages_total{result="malformed"}`),
		dropped:    set.NewCounter(`pushd_direct_offline_dropped_total`),
		written:    set.NewCounter(`pushd_direct_written_total`),
		writeFails: set.NewCounter(`pushd_direct_write_failures_total`),
		acked:      set.NewCounter(`pushd_direct_arrivals_total`),
		moved:      set.NewCounter(`pushd_direct_moved_total`),
	}
	c.m.connected = set.NewGauge(`pushd_direct_connections`, func() float64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return float64(len(c.sessions))
	})
	return c
}

// Cluster makes the core one gateway node of several sharing push.direct's parts
// partitions: it serves only the devices of the partitions its consumer owns, none until the
// consumer is first told (Consume), and moves a device away (CloseMoved) when its partition
// goes to another node. Call it before the core serves any device.
func (c *Core) Cluster(parts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parts, c.owned = parts, make([]bool, parts)
}

// Consume runs the core's consumer of push.direct until ctx ends. In a cluster the log must
// tell the partitions it owns (queue/kafka); when Consume returns the node owns none, and
// every device still connected is moved.
func (c *Core) Consume(ctx context.Context, log Consumer) error {
	c.mu.Lock()
	cluster := c.parts > 0
	c.mu.Unlock()
	if !cluster {
		return log.Consume(ctx, queue.TopicDirect, queue.GroupGateway, c.Handle)
	}
	al, ok := log.(assigningConsumer)
	if !ok {
		return fmt.Errorf("cannot consume %s in a cluster: the log does not tell a member its partitions", queue.TopicDirect)
	}
	err := al.ConsumeAssigned(ctx, queue.TopicDirect, queue.GroupGateway, c.Handle, c.setOwned)
	c.setOwned(nil)
	return err
}

// setOwned records the partitions this node owns now, and closes with CloseMoved every
// session of a partition it no longer owns: those devices ask the router for the new owner,
// which flushes what is cached for them (the cache is shared).
func (c *Core) setOwned(partitions []int) {
	c.mu.Lock()
	if c.parts == 0 {
		c.mu.Unlock()
		return
	}
	owned := make([]bool, c.parts)
	for _, p := range partitions {
		if p >= 0 && p < c.parts {
			owned[p] = true
		}
	}
	c.owned = owned
	var moved []*attached
	for k, a := range c.sessions {
		if !c.ownsLocked(k.iid) {
			moved = append(moved, a)
			delete(c.sessions, k)
		}
	}
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	for _, a := range moved {
		a.s.Close(CloseMoved, "moved to another gateway node: ask the router again")
	}
	c.m.moved.Add(len(moved))
}

// ownsLocked tells whether this node serves installation iid; c.mu is held.
func (c *Core) ownsLocked(iid string) bool {
	return c.parts == 0 || c.owned[queue.PartitionForKey([]byte(iid), c.parts)]
}

// Owns tells whether this node serves installation iid now: always on one node, in a
// cluster when it owns the installation's push.direct partition.
func (c *Core) Owns(iid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ownsLocked(iid)
}

// Owned lists the push.direct partitions this node owns, ascending (nil on one node).
func (c *Core) Owned() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for p, ok := range c.owned {
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// Changed is signalled when the partitions this node owns change.
func (c *Core) Changed() <-chan struct{} { return c.changed }

// Handle is the push.direct handler: cache (and count) the message, then write it to its
// device if connected. Returning nil commits the offset: only after the cache write.
func (c *Core) Handle(ctx context.Context, qm queue.Message) error {
	var m push.DirectMessage
	if err := json.Unmarshal(qm.Value, &m); err != nil || m.AppID == "" || m.InstallationID == "" || m.ID == "" {
		c.m.bad.Inc()
		c.log.Warn("malformed push.direct record skipped", zap.Int("partition", qm.Partition), zap.Int64("offset", qm.Offset))
		return nil
	}
	out, dropped, err := c.cache.CacheDirect(ctx, m, c.now(), c.cfg.OfflineLimit)
	if err != nil {
		return err
	}
	c.m.dropped.Add(dropped)
	switch out {
	case push.CacheDuplicate:
		c.m.duplicates.Inc()
		return nil
	case push.CacheCancelled:
		c.m.cancelled.Inc()
		return nil
	case push.CacheExpired:
		c.m.expired.Inc()
		c.emit(webhook.Expired, m.AppID, m.InstallationID, m.ID, m.NotificationID, c.now())
		return nil
	}
	c.m.cached.Inc()
	c.emit(webhook.Sent, m.AppID, m.InstallationID, m.ID, m.NotificationID, c.now())
	fpAfterCache.Hit()
	c.mu.Lock()
	a := c.sessions[devKey{m.AppID, m.InstallationID}]
	c.mu.Unlock()
	if a != nil {
		c.writeLive(a, m)
	}
	return nil
}

// writeLive delivers a newly cached message on a, unless the connect's flush already did; a
// failed write closes the session (the message stays cached).
func (c *Core) writeLive(a *attached, m push.DirectMessage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.flushed != nil {
		if _, done := a.flushed[m.ID]; done {
			return
		}
		a.flushed = nil
	}
	if err := a.s.Deliver([]push.DirectMessage{m}); err != nil {
		c.m.writeFails.Inc()
		a.s.Close(CloseWriteFailed, "write failed")
		return
	}
	c.m.written.Inc()
}

// Attach makes s the installation's live session, replacing (and closing) an older one, and
// flushes the offline cache to it in order. hello, when set, is called with the number of
// cached messages before they are delivered. Detach ends it. In a cluster, a device whose
// partition this node does not own is refused with ErrMoved; the check and the registration
// are one step against setOwned, so a device is never left on a node that lost it.
func (c *Core) Attach(ctx context.Context, app, iid string, s Session, hello func(cached int) error) error {
	a := &attached{s: s}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := devKey{app, iid}
	c.mu.Lock()
	if !c.ownsLocked(iid) {
		c.mu.Unlock()
		return ErrMoved
	}
	old := c.sessions[k]
	c.sessions[k] = a
	c.mu.Unlock()
	if old != nil {
		old.s.Close(CloseReplaced, "replaced by a newer connection")
	}
	if c.presence != nil {
		if err := c.presence.DeviceOnline(ctx, app, iid, c.node, c.now()); err != nil {
			c.log.Warn("cannot record a device's presence", zap.String("app_id", app), zap.Error(err))
		}
	}
	if c.afterAttach != nil {
		c.afterAttach()
	}
	msgs, err := c.cache.OfflineMessages(ctx, app, iid, c.now())
	if err != nil {
		c.Detach(app, iid, s)
		return fmt.Errorf("cannot flush the offline cache of installation %s of app %s: %w", iid, app, err)
	}
	if hello != nil {
		if err := hello(len(msgs)); err != nil {
			c.Detach(app, iid, s)
			return err
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	a.flushed = make(map[string]struct{}, len(msgs))
	for i := range msgs {
		a.flushed[msgs[i].ID] = struct{}{}
	}
	if err := s.Deliver(msgs); err != nil {
		c.m.writeFails.Inc()
		c.Detach(app, iid, s)
		return err
	}
	c.m.written.Add(len(msgs))
	return nil
}

// Detach removes s if it is still the installation's live session.
func (c *Core) Detach(app, iid string, s Session) {
	k := devKey{app, iid}
	c.mu.Lock()
	a := c.sessions[k]
	gone := a != nil && a.s == s
	if gone {
		delete(c.sessions, k)
		c.leaving[k]++
	}
	c.mu.Unlock()
	if !gone {
		return
	}
	if c.presence != nil {
		if err := c.presence.DeviceOffline(context.Background(), app, iid, c.node, c.now()); err != nil {
			c.log.Warn("cannot record a device's presence", zap.String("app_id", app), zap.Error(err))
		}
	}
	c.mu.Lock()
	if c.leaving[k]--; c.leaving[k] <= 0 {
		delete(c.leaving, k)
	}
	c.mu.Unlock()
}

// Ack removes the acked messages from the cache and counts their arrivals. The webhook gets
// an arrived event per id of an ack that counted any: an id acked before repeats its event
// id, which receivers de-duplicate (docs/decisions.md, "Receipts out").
func (c *Core) Ack(ctx context.Context, app, iid string, ids []string) error {
	now := c.now()
	n, err := c.cache.AckDirect(ctx, app, iid, ids, now)
	c.m.acked.Add(n)
	if n > 0 {
		for _, id := range ids {
			c.emit(webhook.Arrived, app, iid, id, "", now)
		}
	}
	if err == nil && c.presence != nil {
		if perr := c.presence.DeviceAcked(ctx, app, iid, c.now()); perr != nil {
			c.log.Warn("cannot record a device's presence", zap.String("app_id", app), zap.Error(perr))
		}
	}
	return err
}

// Connected is the number of live sessions.
func (c *Core) Connected() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// CloseAll closes every session with code and reason (shutdown: 1001 going away).
func (c *Core) CloseAll(code int, reason string) {
	c.mu.Lock()
	all := c.sessions
	c.sessions = map[devKey]*attached{}
	c.mu.Unlock()
	now := c.now()
	for k, a := range all {
		a.s.Close(code, reason)
		if c.presence != nil {
			if err := c.presence.DeviceOffline(context.Background(), k.app, k.iid, c.node, now); err != nil {
				c.log.Warn("cannot record a device's presence", zap.String("app_id", k.app), zap.Error(err))
			}
		}
	}
}

// Leaving says whether a connection of the installation was detached here and its disconnect
// is still being recorded.
func (c *Core) Leaving(app, iid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leaving[devKey{app, iid}] > 0
}

// Online says whether the installation has a live session on this node (fan-out's
// Presence: own_first asks it).
func (c *Core) Online(app, iid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[devKey{app, iid}] != nil
}
