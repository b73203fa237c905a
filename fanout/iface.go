package fanout

import (
	"context"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/store"
)

// The narrow views of the store fan-out calls. store/pebble and store/cassandra implement them
// all; tests may fake one.

// Scanner streams index rows (by_bucket or by_channel) in key order.
type Scanner interface {
	Scan(ctx context.Context, r store.ScanRange, fn func(*store.Row) error) error
}

// ProgressNoSync is a store that can write a task's progress without an fsync of its own,
// durable with the next synced write (Pebble: one write-ahead log, written in order). The
// worker writes a task's final progress so, right before the synced record update that
// completes the task.
type ProgressNoSync interface {
	PutTaskProgressNoSync(ctx context.Context, p push.TaskProgress) error
}

// VolumeNoSync is a store that can add to an app's daily volume without an fsync of its own,
// durable with the next synced write (Pebble). A task reserves each batch's volume so when
// WorkerConfig.SyncEvery is set; the checkpoint after the batch, synced at least every
// SyncEvery deliveries, makes it durable.
type VolumeNoSync interface {
	AddDailyVolumeNoSync(ctx context.Context, appID, day string, n int64) (total int64, err error)
}

// TokenInvalidator deletes the installation of a token a gateway reported dead (objectID ""
// for a listed device id, which is remembered dead instead); since is when the gateway
// learned it, zero when it does not say. sender.TokenInvalidator's first method.
type TokenInvalidator interface {
	InvalidateToken(ctx context.Context, appID, objectID, deviceID string, since time.Time) error
}

// RecordNoSync is a store that can update a push record without an fsync of its own: the
// update is durable once a later synced write to the same store returns (store/pebble). The
// planner records the plan of a job it runs itself with it (PlannerConfig.InlineSingle): the
// task's synced checkpoints (at least every WorkerConfig.SyncEvery deliveries) and the update
// that completes it are synced writes of that store, so a crash before the first of them
// repeats at most what one before a synced checkpoint would; a task that ends with none (its
// push cancelled or gone) leaves nothing to keep.
type RecordNoSync interface {
	UpdateNotificationNoSync(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error)
}

// RecordChanger is a store that can update a push record without reading it back as readers
// see it (store/pebble): the planner, which does not read its update's result, spares the
// reads of the counts kept beside the record. sync false is RecordNoSync's update.
type RecordChanger interface {
	ChangeNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error, sync bool) error
}

// BucketsScanner is a store that scans a range of buckets in one pass: buckets r.Bucket to
// hi-1, in order, each as Scan would (r.After applies to the first), telling fn each row's
// bucket. A task scans with it when its store has it (Pebble), else bucket by bucket.
type BucketsScanner interface {
	ScanBuckets(ctx context.Context, r store.ScanRange, hi int, fn func(bucket int, row *store.Row) error) error
}

// Lookup finds installations by object id or device id (point tasks, devices jobs).
type Lookup interface {
	GetInstallation(ctx context.Context, appID, objectID string) (push.Installation, error)
	LookupDevice(ctx context.Context, appID string, kind push.IDKind, deviceID string) (objectID string, err error)
}

// Records reads and updates push records.
type Records interface {
	GetNotification(ctx context.Context, appID, objectID string) (push.Notification, error)
	UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error)
}

// Checkpoints keeps task progress.
type Checkpoints interface {
	GetTaskProgress(ctx context.Context, jobID, taskID string) (push.TaskProgress, error)
	PutTaskProgress(ctx context.Context, p push.TaskProgress) error
}

// Apps reads app settings and counts daily volume.
type Apps interface {
	GetApp(ctx context.Context, appID string) (push.App, error)
	AddDailyVolume(ctx context.Context, appID, day string, n int64) (total int64, err error)
}

// PlannerStore is what the planner uses.
type PlannerStore interface {
	Scanner
	Records
	GetApp(ctx context.Context, appID string) (push.App, error)
}

// Badges writes the badges of a push whose badge is "Increment" (store.Store.IncrementBadges).
type Badges interface {
	IncrementBadges(ctx context.Context, appID string, buckets int, pushID string, objectIDs []string, badges []int64) error
}

// DeadTokens reads the dead-token marks of device ids listed by /1.1/push/devices.
type DeadTokens interface {
	DeadToken(ctx context.Context, appID, deviceID string) (time.Time, error)
}

// WorkerStore is what a worker uses.
type WorkerStore interface {
	Scanner
	Lookup
	Records
	Checkpoints
	Apps
	Badges
	DeadTokens
	MarketingCounter
}

// Appender appends records to the log (queue/embedded, queue/kafka).
type Appender interface {
	Partitions(topic string) int
	Append(ctx context.Context, topic string, recs ...queue.Record) error
}

// Consumer consumes a topic as a member of a group (queue/embedded, queue/kafka).
type Consumer interface {
	Consume(ctx context.Context, topic, group string, h queue.Handler) error
}

// Sender delivers a batch: it returns once res[i] holds the final result of ds[i]. A non-nil
// error means the batch is not final (ctx ended, sender closed): the worker neither counts
// nor checkpoints it, and the task is retried from its last checkpoint. After a nil return
// the worker reuses the ds and res slices for a later batch (after an error it never does);
// the strings in ds are ordinary immutable strings a sender may keep. sender.Dispatcher
// implements it.
type Sender interface {
	Send(ctx context.Context, ds []push.Delivery, res []push.Result) error
}

// heldReasons is an optional capability of the Sender (sender.Dispatcher, through the own
// channel's Handoff): for a delivery of a push that expired before it was handed to Send, the
// reason a gateway held it back (a vendor's spent daily quota). Such a target is counted
// failed with that reason, not expired (issue 14: quota-parked targets fail with the reason
// when the push expires).
type heldReasons interface {
	HeldReason(ctx context.Context, d *push.Delivery) (string, bool)
}

// Messages renders a job's payload per delivery channel, each at most once (render.Cache).
type Messages interface {
	Get(channel string) (*push.Message, error)
}
