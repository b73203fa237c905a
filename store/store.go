// Package store owns what every store implementation shares: the data layout (DESIGN.md,
// CLUSTER.md), the row types, the sentinel errors, and (in store/storetest) the contract
// suite. Consumers declare the narrow interfaces they call; Store below is the whole
// contract, used only by storetest and by cmd/pushd wiring.
//
// Every key starts with the app id: no method reads across apps.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/pushd/pushd/push"
)

// Sentinel errors callers branch on.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrDuplicate = errors.New("unique value already taken") // a device id indexed to another installation
	ErrClosed    = errors.New("store closed")
	// ErrLeaseLost refuses a renewal, or a write fenced by a lease's epoch, from a holder whose
	// lease expired or passed to a later epoch (a paused or partitioned node).
	ErrLeaseLost = errors.New("lease lost")
)

// Lease is a named right to act alone in the cluster (leases): Owner holds it until Expires.
// Epoch grows by one with each new tenure (another owner, or the same one after an expiry or
// a release), never repeats, and fences a paused holder: the writes a holder makes under a
// lease carry its epoch, and a store refuses them once a later epoch has written.
type Lease struct {
	Name    string
	Owner   string
	Epoch   int64
	Expires time.Time
}

// Gateway is one gateway node's advertisement (gateways): the URL devices connect to it at
// and the push.direct partitions it consumes, kept until Expires. The routers read them to
// send a device to the node owning its installation's partition.
type Gateway struct {
	Node       string // the node's name, unique per process
	URL        string // its connect URL: ws:// or wss://, path /1.1/connect
	Partitions []int  // ascending
	Expires    time.Time
}

// ScanRange selects index rows for a scan: by_bucket when Channel is "", else by_channel.
// Rows come in key order (bucket, deviceType, objectId); After resumes strictly after a cursor
// returned by an earlier row.
type ScanRange struct {
	AppID      string
	Channel    string
	Bucket     int
	DeviceType string // "" for all
	After      []byte
}

// Row is one index row handed to a scan callback. Route and Doc alias the store's buffers and
// are valid only during the callback: copy what you keep.
type Row struct {
	Cursor []byte
	Route  *push.Route
	Doc    []byte // the full JSON document
}

// ReqClaim is the first push of a req_id within its window.
type ReqClaim struct {
	ObjectID  string    `json:"objectId"`
	CreatedAt time.Time `json:"createdAt"`
}

// DirectAckedKeep bounds how long an acked (or expired) own-channel message is remembered, to
// drop a second copy of it from push.direct: such copies come from a crash before an offset's
// commit or a fan-out task sent again, within minutes; a day covers a long outage of the
// gateway too, and keeps the rows a device's cache write reads few.
const DirectAckedKeep = 24 * time.Hour

// Store is the full contract of a store implementation.
type Store interface {
	// Apps.
	CreateApp(ctx context.Context, app push.App) error // ErrExists
	GetApp(ctx context.Context, appID string) (push.App, error)
	PutApp(ctx context.Context, app push.App) error // ErrNotFound if absent
	ListApps(ctx context.Context) ([]push.App, error)

	// Installations. PutInstallation writes the document and every index in one batch,
	// removing the index rows of the previous version; a device id already indexed to another
	// objectId fails with ErrDuplicate and writes nothing. Callers serialise writes to one
	// object (the store does not lock on their behalf).
	GetInstallation(ctx context.Context, appID, objectID string) (push.Installation, error)
	LookupDevice(ctx context.Context, appID string, kind push.IDKind, deviceID string) (objectID string, err error)
	PutInstallation(ctx context.Context, appID string, buckets int, inst push.Installation) error
	DeleteInstallation(ctx context.Context, appID string, buckets int, objectID string) error
	Scan(ctx context.Context, r ScanRange, fn func(*Row) error) error
	// DeleteInactive removes up to limit installations whose UpdatedAt is before cutoff,
	// indexes included, and says how many it removed. An implementation may leave those
	// updated in cutoff's last hour to a later call (store/pebble keys its index by the hour).
	DeleteInactive(ctx context.Context, appID string, buckets int, cutoff time.Time, limit int) (int, error)
	// IncrementBadges serves a push whose badge is "Increment": for push pushID it sets the
	// badge of each installation of objectIDs to push.NextBadge of its document and writes
	// that badge to badges[i]. Once per installation per push: a later call with the same
	// pushID (a batch sent again after a crash) writes nothing and gives the badge the first
	// call set, unless another push incremented that installation in between. A missing
	// installation gets badge 1 and nothing is written. UpdatedAt is left alone (a push is
	// no app open), and the write need not be synced: the task checkpoint that follows it is.
	IncrementBadges(ctx context.Context, appID string, buckets int, pushID string, objectIDs []string, badges []int64) error

	// Dead device ids named in /1.1/push/devices. MarkDeadToken remembers that the gateway
	// reported deviceID of the app dead at since; DeadToken returns that time, or ErrNotFound.
	// A PutInstallation that gives an installation deviceID (one it did not hold) forgets the
	// mark in the same write. A mark may disappear push.DeadTokenWindow after since.
	MarkDeadToken(ctx context.Context, appID, deviceID string, since time.Time) error
	DeadToken(ctx context.Context, appID, deviceID string) (time.Time, error)

	// Push records. A record holding a PendingJob is indexed by its PendingSince, in the same
	// write as the record, until an update or a delete drops the job; PendingJobs lists them.
	CreateNotification(ctx context.Context, n push.Notification) error
	// CreateScheduledNotification writes a scheduled push's record and its schedule in one
	// write: a crash leaves both or neither. ErrExists as CreateNotification.
	CreateScheduledNotification(ctx context.Context, n push.Notification, sc push.Scheduled) error
	// PendingJobs lists up to limit records of the app holding a PendingJob pending since
	// before the cutoff, longest pending first.
	PendingJobs(ctx context.Context, appID string, before time.Time, limit int) ([]push.Notification, error)
	GetNotification(ctx context.Context, appID, objectID string) (push.Notification, error)
	// UpdateNotification reads, applies fn and writes atomically with respect to other
	// UpdateNotification calls on the same record. fn returning an error aborts. fn sees the
	// stored document, without the own channel's counts (CacheDirect, AckDirect), which the
	// record readers (GetNotification, ListNotifications, NotificationsByNID, and the record
	// UpdateNotification returns) add into Counts["direct"].
	UpdateNotification(ctx context.Context, appID, objectID string, fn func(*push.Notification) error) (push.Notification, error)
	DeleteNotification(ctx context.Context, appID, objectID string) error
	// ListNotifications yields records newest first.
	ListNotifications(ctx context.Context, appID string, fn func(*push.Notification) error) error
	NotificationsByNID(ctx context.Context, appID, notificationID string) ([]push.Notification, error)

	// Scheduled pushes. NextID returns a number unique across the cluster for the name.
	NextID(ctx context.Context, name string) (int64, error)
	PutScheduled(ctx context.Context, s push.Scheduled) error
	ListScheduled(ctx context.Context, appID string) ([]push.Scheduled, error)
	GetScheduled(ctx context.Context, appID string, id int64) (push.Scheduled, error)
	// DeleteScheduled removes it; ErrNotFound when it is already gone (cancelled or fired),
	// which is how exactly-one firing or cancelling wins.
	DeleteScheduled(ctx context.Context, appID string, id int64) error
	DueScheduled(ctx context.Context, before time.Time, limit int) ([]push.Scheduled, error)

	// Limits. ClaimReqID stores claim unless an unexpired claim exists, which it returns
	// with claimed=false.
	ClaimReqID(ctx context.Context, appID, reqID string, claim ReqClaim, ttl time.Duration) (prev ReqClaim, claimed bool, err error)
	// ReleaseReqID removes the claim of reqID if it is still objectID's (a push that failed
	// after claiming), so that a retry is a new push.
	ReleaseReqID(ctx context.Context, appID, reqID, objectID string) error
	AddDailyVolume(ctx context.Context, appID, day string, n int64) (total int64, err error)
	DailyVolume(ctx context.Context, appID, day string) (int64, error)
	// CountMarketing counts marketing push pushID against the daily cap of each of devices
	// (marketing_counts; push.MarketingRules.DailyCap), in one store operation per call:
	// allowed[i] says devices[i] may be sent it, either counted now or already counted for
	// pushID that day (a task run again counts nothing twice); false once the device had cap
	// other marketing pushes that day. A device listed twice counts once. Counts are kept
	// about two days. A store without conditional writes across rows (Cassandra) may let
	// pushes counted at the same instant on two nodes take a device past its cap, never a
	// single push twice.
	CountMarketing(ctx context.Context, appID, day, pushID string, cap int, devices []string, allowed []bool) error

	// Calls per minute (call_counts, app_blocks), shared by every API node. ReserveCalls adds
	// up to want calls to app's count of minute (a unix minute) without taking it past limit,
	// and says how many it added: 0 when the minute's budget is spent. Concurrent callers never
	// get more than limit in total; a store whose counter cannot be conditional (Cassandra)
	// may grant fewer than would fit while callers race at the limit, never more.
	ReserveCalls(ctx context.Context, appID string, minute int64, want, limit int) (granted int, err error)
	// Vendor quotas (vendor_quotas; issue 20 item 2), shared by every fan-out node.
	// ReserveVendorQuota adds up to want messages to app's count of budget (vendor/class) in
	// the quota day day (a date in the vendor's zone) without taking it past limit, and says
	// how many it added: 0 once the day is spent. Concurrent callers never get more than limit
	// in total (a store whose counter cannot be conditional may grant fewer, never more). A
	// day marked by SpendVendorQuota (the vendor said its quota is spent) grants nothing. until
	// is the day's end: a row need not outlive it.
	ReserveVendorQuota(ctx context.Context, appID, budget, day string, want, limit int64, until time.Time) (granted int64, err error)
	SpendVendorQuota(ctx context.Context, appID, budget, day string, until time.Time) error
	// Deferred targets (deferred): targets a spent quota holds until their window ends.
	// PutDeferred writes them durably (a target already there, by Until and Deferred.Key, is
	// overwritten); DueDeferred lists up to limit whose Until is at or before before, oldest
	// window first; DeleteDeferred removes them (absent ones are no error).
	PutDeferred(ctx context.Context, ds []push.Deferred) error
	DueDeferred(ctx context.Context, before time.Time, limit int) ([]push.Deferred, error)
	DeleteDeferred(ctx context.Context, ds []push.Deferred) error

	// BlockApp refuses app's push calls until until; an earlier until than the stored one is
	// ignored. AppBlocked returns the block's end when it is after now, else the zero time.
	BlockApp(ctx context.Context, appID string, until time.Time) error
	AppBlocked(ctx context.Context, appID string, now time.Time) (time.Time, error)

	// Members (members): nodes of a role that share a cluster-wide budget (a sender rate) by
	// counting each other. RegisterMember records member of group as live until now+ttl and
	// says how many members of group are live at now, itself included.
	RegisterMember(ctx context.Context, group, member string, now time.Time, ttl time.Duration) (live int, err error)

	// Own-channel offline cache (offline_messages). CacheDirect stores msg in the cache of its
	// installation and counts it on its push record (msg.ID) in one write: Counts[direct].Sent
	// when stored, .Expired when msg has expired at now (kept beside the record, not in its
	// document: many devices count at once; DeleteNotification removes them with it). It is idempotent per (app,
	// installation, msg.ID): a message cached or acked before gives CacheDuplicate and writes
	// nothing (an acked message is remembered for DirectAckedKeep). A
	// missing push record (cancelled) gives CacheCancelled and writes nothing. At most limit
	// messages stay cached per installation: the oldest are dropped, and dropped says how many.
	// The write is durable when CacheDirect returns.
	CacheDirect(ctx context.Context, msg push.DirectMessage, now time.Time, limit int) (out push.CacheOutcome, dropped int, err error)
	// OfflineMessages lists the installation's cached messages not yet acked nor expired at
	// now, oldest first.
	OfflineMessages(ctx context.Context, appID, installationID string, now time.Time) ([]push.DirectMessage, error)
	// AckDirect removes the installation's cached messages of ids and counts each once as an
	// arrival on its push record; it says how many it counted (ids unknown or acked before
	// count nothing).
	AckDirect(ctx context.Context, appID, installationID string, ids []string, now time.Time) (int, error)

	// CountReceipts counts, on push record pushID, an arrival on channel (a vendor) for each
	// of deviceIDs a vendor receipt confirmed: once per (record, channel, device), however often
	// the vendor repeats the receipt. It says how many it counted. A missing record (cancelled,
	// swept) counts nothing and gives 0. The counts sit beside the record, as the own channel's
	// (record readers add them into Counts[channel].Arrivals; DeleteNotification removes them).
	CountReceipts(ctx context.Context, appID, pushID, channel string, deviceIDs []string, now time.Time) (int, error)

	// Leases (leases). Expiry is judged at the now the caller gives, with the precision of a
	// millisecond; a lease expires at Expires (free at now >= Expires).
	//
	// AcquireLease takes lease name for owner until now+ttl when it is free at now (never held,
	// released, or expired), with an epoch one above the lease's last; when owner holds it
	// already it extends it and keeps the epoch. It returns the lease with ok=true when owner
	// holds it, else the holder's lease with ok=false. Of concurrent acquirers exactly one wins.
	AcquireLease(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (l Lease, ok bool, err error)
	// RenewLease extends l until now+ttl while it is still held: same owner and epoch, not
	// expired at now. Otherwise ErrLeaseLost.
	RenewLease(ctx context.Context, l Lease, now time.Time, ttl time.Duration) (Lease, error)
	// ReleaseLease frees l for the next acquirer if it is still held (same owner and epoch),
	// keeping its epoch; a lease no longer held is left alone.
	ReleaseLease(ctx context.Context, l Lease) error
	// ClaimScheduled fences the firing of scheduled push id by l, the scheduler's lease as its
	// holder knows it: it is refused (ErrLeaseLost) unless l is the lease's current tenure
	// (owner and epoch; whether it expired by someone's clock is not judged) or when a greater
	// epoch claimed the schedule, and otherwise records l.Epoch on the schedule. A holder that
	// lost the lease therefore claims nothing, whether or not the next holder reached this
	// schedule yet. ErrNotFound when the schedule is gone (fired or cancelled). The same tenure
	// may claim again: a retry, or the confirmation a firing makes before its job's append.
	ClaimScheduled(ctx context.Context, l Lease, appID string, id int64) error

	// Gateway registry (gateways). PutGateway writes (or replaces) g.Node's advertisement,
	// kept until g.Expires; DeleteGateway removes it (a node stopping); Gateways lists those
	// not expired at now, by Node. The registry is small: one row per gateway node.
	PutGateway(ctx context.Context, g Gateway) error
	DeleteGateway(ctx context.Context, node string) error
	Gateways(ctx context.Context, now time.Time) ([]Gateway, error)

	// Own-channel presence (presence), written by the gateway holding a device on connect,
	// disconnect and ack, never per message. DeviceOnline records that node holds iid's
	// connection since at; DeviceOffline that node's connection of iid ended at at (a
	// connection recorded for another node since is left alone: the device moved); DeviceAcked
	// the last ack. DevicePresence reads them back (the newest connection when several nodes
	// are recorded). ConnectedNodes fills nodes[i] with the node recorded holding iids[i]'s
	// connection ("" none): fan-out's own_first asks it once per batch. DeleteInstallation
	// and DeleteInactive remove the presence of the installation's installationId.
	DeviceOnline(ctx context.Context, appID, iid, node string, at time.Time) error
	DeviceOffline(ctx context.Context, appID, iid, node string, at time.Time) error
	DeviceAcked(ctx context.Context, appID, iid string, at time.Time) error
	DevicePresence(ctx context.Context, appID, iid string) (push.DevicePresence, error)
	ConnectedNodes(ctx context.Context, appID string, iids []string, nodes []string) error

	// Fan-out checkpoints.
	GetTaskProgress(ctx context.Context, jobID, taskID string) (push.TaskProgress, error)
	PutTaskProgress(ctx context.Context, p push.TaskProgress) error

	Close() error
}
