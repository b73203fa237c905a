// Package pushapi owns the push half of the REST API: POST /1.1/push and /1.1/push/devices
// (validation through api/wire and query, permissions, the calls-per-minute limit, the daily
// volume check, req_id de-duplication, the push record, the durable job or the scheduled
// push), the push records (/1.1/notifications, /1.1/tables/Notifications) and the scheduled
// pushes (/1.1/scheduledPushMessages). A push with the pushd extension "dry_run": true passes
// the same checks, then answers its audience (counted by an injected Counter) and payloads,
// and writes nothing (dryrun.go). It registers its routes on an *api.Server, which does
// authentication, body limits and the {code, error} shape.
//
// A push is answered 2xx only after its job is durable in the log (or its schedule in the
// store). Handlers are safe for concurrent use; a Service holds no per-request state.
package pushapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/limit"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
)

// ReqIDWindow is how long a req_id makes later pushes of the same app duplicates.
const ReqIDWindow = 5 * time.Minute

// Store is what the push endpoints read and write.
type Store interface {
	ClaimReqID(ctx context.Context, appID, reqID string, claim store.ReqClaim, ttl time.Duration) (store.ReqClaim, bool, error)
	ReleaseReqID(ctx context.Context, appID, reqID, objectID string) error
	DailyVolume(ctx context.Context, appID, day string) (int64, error)

	CreateNotification(ctx context.Context, n push.Notification) error
	CreateScheduledNotification(ctx context.Context, n push.Notification, sc push.Scheduled) error
	GetNotification(ctx context.Context, appID, objectID string) (push.Notification, error)
	UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error)
	DeleteNotification(ctx context.Context, appID, objectID string) error
	ListNotifications(ctx context.Context, appID string, fn func(*push.Notification) error) error
	NotificationsByNID(ctx context.Context, appID, notificationID string) ([]push.Notification, error)

	NextID(ctx context.Context, name string) (int64, error)
	ListScheduled(ctx context.Context, appID string) ([]push.Scheduled, error)
	GetScheduled(ctx context.Context, appID string, id int64) (push.Scheduled, error)
	DeleteScheduled(ctx context.Context, appID string, id int64) error
}

// Log is where accepted jobs go.
type Log interface {
	Partitions(topic string) int
	Append(ctx context.Context, topic string, recs ...queue.Record) error
}

// RecordNoSyncer is an optional Store capability: CreateNotificationNoSync writes a push
// record without waiting for its fsync; the record is durable once a later synced write to the
// same store returns (store/pebble documents why). The service uses it only when such a write
// follows before it answers: the job, when Deps.LogSyncsStore says the log's Append is such a
// write. One fsync per push instead of two, and nothing is acknowledged before it is durable.
//
// CreateNewNotificationNoSync is the same for a record whose objectId was just generated
// (push.NewObjectID): no record can hold it, so the store skips the read that refuses one.
// ClaimReqIDNoSync is ClaimReqID on the same terms: the record's write and the job's append
// follow the claim, so a call with a req_id waits for one fsync, not two in a row.
type RecordNoSyncer interface {
	CreateNotificationNoSync(ctx context.Context, n push.Notification) error
	CreateNewNotificationNoSync(ctx context.Context, n push.Notification) error
	ClaimReqIDNoSync(ctx context.Context, appID, reqID string, claim store.ReqClaim, ttl time.Duration) (store.ReqClaim, bool, error)
}

// JointAccepter writes a push whole in one synced write (internal/jointaccept: store/pebble and
// queue/embedded on one database): its record n (an objectId just generated, no PendingJob),
// the claim of its req_id when it has one, and rec, its job, appended to topic. A live claim of
// another call wins: returned with claimed false, and nothing is written. Without a req_id,
// claimed is true. Every push that is not scheduled goes this way when Deps.Joint is set: one
// commit per push, no copy of the job in the record, no pending-jobs row, and no crash state
// between the record and its job for a retry or the re-driver to mend.
type JointAccepter interface {
	AcceptJoint(ctx context.Context, n push.Notification, ttl time.Duration, topic string, rec queue.Record) (prev store.ReqClaim, claimed bool, err error)
}

// Deps are what the service calls out to.
type Deps struct {
	Store   Store
	Log     Log
	Limiter *limit.Limiter
	Logger  *zap.Logger
	Metrics *metrics.Set
	// LogSyncsStore says that a successful Log.Append makes every earlier write of Store
	// durable: queue/embedded over the store's own Pebble (store/pebble.Store.DB()), whose
	// synced Append fsyncs the one WAL the record went to. Never set it for Kafka or for a log
	// in another database.
	LogSyncsStore bool
	// Joint, when set, writes pushes that are not scheduled whole (JointAccepter); it must
	// write to Store's records and to Log.
	Joint JointAccepter
	// Counter counts the audience of a dry run (fanout.Audience); nil: dry runs answer 503.
	Counter Counter
	// DryRun bounds dry runs; the zero value means DefaultDryRunConfig.
	DryRun DryRunConfig
}

// Service serves the push endpoints.
type Service struct {
	st  Store
	log Log
	lim *limit.Limiter
	zl  *zap.Logger

	volume *volumeCache
	reqs   keyLocks // req_ids, and apps adding a scheduled push, being accepted by this process

	// noSync is st's RecordNoSyncer, or nil; jobSyncsStore is Deps.LogSyncsStore.
	noSync        RecordNoSyncer
	jobSyncsStore bool
	joint         JointAccepter // Deps.Joint

	accepted  *metrics.Counter
	scheduled *metrics.Counter
	dupes     *metrics.Counter
	// incarnation names this Service in the records it writes (push.Notification.PendingBy).
	incarnation string
	// reappended counts jobs a req_id retry appended again, its record still holding them.
	reappended *metrics.Counter

	// Dry runs: the audience counter, its bounds, and the places of the ones counting.
	counter         Counter
	dryCfg          DryRunConfig
	dryRuns         chan struct{}
	dryRunsTotal    *metrics.Counter
	dryRunsTimedOut *metrics.Counter

	// maxScheduled is MaxPendingScheduled; tests lower it. afterScheduledCount, set only by
	// tests, runs after a scheduled push's first count, before its write.
	maxScheduled        int
	afterScheduledCount func()
}

// New builds the service.
func New(d Deps) *Service {
	if d.Logger == nil {
		d.Logger = zap.NewNop()
	}
	if d.Metrics == nil {
		d.Metrics = metrics.NewSet()
	}
	if d.Limiter == nil {
		// The store's shared counts when it keeps them (every store.Store does), so that
		// every node over it enforces one limit.
		ls, _ := d.Store.(limit.Store)
		d.Limiter = limit.New(ls, nil, d.Metrics)
	}
	noSync, _ := d.Store.(RecordNoSyncer)
	if d.DryRun == (DryRunConfig{}) {
		d.DryRun = DefaultDryRunConfig()
	}
	dryRuns := make(chan struct{}, max(d.DryRun.Concurrency, 1))
	d.Metrics.GetOrCreateGauge(`pushd_api_dry_runs_capacity`, func() float64 { return float64(cap(dryRuns)) })
	d.Metrics.GetOrCreateGauge(`pushd_api_dry_runs_running`, func() float64 { return float64(len(dryRuns)) })
	return &Service{
		st: d.Store, log: d.Log, lim: d.Limiter, zl: d.Logger.Named("pushapi"),
		counter: d.Counter, dryCfg: d.DryRun, dryRuns: dryRuns,
		noSync: noSync, jobSyncsStore: d.LogSyncsStore, joint: d.Joint,
		incarnation: push.NewObjectID(),
		volume:      newVolumeCache(d.Store.DailyVolume),
		reqs:        keyLocks{m: make(map[string]chan struct{})},
		accepted:    d.Metrics.GetOrCreateCounter(`pushd_api_pushes_total{result="accepted"}`),
		scheduled:   d.Metrics.GetOrCreateCounter(`pushd_api_pushes_total{result="scheduled"}`),
		dupes:       d.Metrics.GetOrCreateCounter(`pushd_api_pushes_total{result="duplicate"}`),
		reappended:  d.Metrics.GetOrCreateCounter(`pushd_api_jobs_reappended_total`),

		dryRunsTotal:    d.Metrics.GetOrCreateCounter(`pushd_api_dry_runs_total`),
		dryRunsTimedOut: d.Metrics.GetOrCreateCounter(`pushd_api_dry_runs_timed_out_total`),
		maxScheduled:    MaxPendingScheduled,
	}
}

// pushBodyLimit lets bodies up to the server cap reach the wire decoder, which answers the
// spec's own rule (below 4096 bytes; for devices pushes without device_ids) with its own message.
const pushBodyLimit = 128 << 10

// Register adds the push routes to srv.
func (s *Service) Register(srv *api.Server) {
	srv.Register(api.Route{Method: "POST", Path: "/1.1/push", Name: "push", Auth: api.AuthApp, JSONBody: true, MaxBody: pushBodyLimit}, s.push)
	srv.Register(api.Route{Method: "POST", Path: "/1.1/push/devices", Name: "push_devices", Auth: api.AuthApp, JSONBody: true, MaxBody: pushBodyLimit}, s.pushDevices)
	srv.Register(api.Route{Method: "GET", Path: "/1.1/notifications", Name: "notifications_list", Auth: api.AuthMaster}, s.listRecords)
	srv.Register(api.Route{Method: "GET", Path: "/1.1/notifications/:nid", Name: "notification_get", Auth: api.AuthMaster}, s.getByNID)
	srv.Register(api.Route{Method: "DELETE", Path: "/1.1/notifications/:nid", Name: "notification_delete", Auth: api.AuthMaster}, s.deleteByNID)
	srv.Register(api.Route{Method: "GET", Path: "/1.1/tables/Notifications/:oid", Name: "notification_object", Auth: api.AuthMaster}, s.getByObjectID)
	srv.Register(api.Route{Method: "GET", Path: "/1.1/scheduledPushMessages", Name: "scheduled_list", Auth: api.AuthMaster}, s.listScheduled)
	srv.Register(api.Route{Method: "DELETE", Path: "/1.1/scheduledPushMessages/:id", Name: "scheduled_delete", Auth: api.AuthMaster}, s.deleteScheduled)
}

// keyLocks serialises the calls of this process that hold one key.
type keyLocks struct {
	mu      sync.Mutex
	m       map[string]chan struct{}
	waiting atomic.Int32 // callers waiting for a key, for tests
}

// lock waits until no other call holds key, or ctx ends, then holds it until unlock.
func (k *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	for {
		k.mu.Lock()
		busy, ok := k.m[key]
		if !ok {
			done := make(chan struct{})
			k.m[key] = done
			k.mu.Unlock()
			return func() {
				k.mu.Lock()
				delete(k.m, key)
				k.mu.Unlock()
				close(done)
			}, nil
		}
		k.mu.Unlock()
		k.waiting.Add(1)
		select {
		case <-busy:
			k.waiting.Add(-1)
		case <-ctx.Done():
			k.waiting.Add(-1)
			return nil, ctx.Err()
		}
	}
}
