package push

import (
	"encoding/json"
	"time"
)

// Push record statuses. A record moves scheduled → in-queue → in-process → done, or ends
// cancelled (its record is then removed, as the spec says).
const (
	StatusScheduled = "scheduled"
	StatusInQueue   = "in-queue"
	StatusInProcess = "in-process"
	StatusDone      = "done"
	StatusCancelled = "cancelled"
)

// Tally counts the targets of one delivery channel.
type Tally struct {
	Targets       int64 `json:"targets"`
	Sent          int64 `json:"sent"`
	Failed        int64 `json:"failed"`
	Expired       int64 `json:"expired"`
	Deferred      int64 `json:"deferred"`
	InvalidTokens int64 `json:"invalidTokens"`
	// FailedBy counts Failed by failure class (Fail*); dead tokens are InvalidTokens, not here.
	FailedBy map[string]int64 `json:"failedBy,omitempty"`
	// Arrivals counts the sent targets a device acknowledged (the own channel) or a vendor
	// receipt confirmed: a figure APNs and FCM cannot give. The record's API shows it as
	// `arrived` (the funnel) and, for existing readers, as `arrivals` (FunnelOf).
	Arrivals int64 `json:"arrivals,omitempty"`
}

// Failure classes: the keys of Tally.FailedBy, and of the funnel's failedBy (FunnelOf), whose
// failed also counts the invalid tokens (FailInvalidToken).
const (
	FailInvalidToken = "invalid_token"  // the gateway says the token is dead (InvalidTokens)
	FailRejected     = "rejected"       // the gateway refused the message or the target for good
	FailUnavailable  = "unavailable"    // the gateway did not take it within the retry horizon
	FailCredentials  = "credentials"    // the gateway rejects the app's credentials
	FailConfig       = "config"         // the app lacks what the channel needs (credentials, a profile, the edition)
	FailQuota        = "quota"          // the vendor's quota stayed spent until the push expired
	FailDailyVolume  = "daily_volume"   // the app's daily volume was reached
	FailPayload      = "payload"        // the push has no valid payload for this channel
	FailCancelled    = "cancelled"      // the sender stopped before the gateway answered
	FailDailyCap     = ReasonDailyCap   // the app's marketing cap per device was reached (MarketingRules)
	FailQuietHours   = ReasonQuietHours // a marketing push reached the device in the app's quiet hours
)

// Add adds o into t.
func (t *Tally) Add(o Tally) {
	t.Targets += o.Targets
	t.Sent += o.Sent
	t.Failed += o.Failed
	t.Expired += o.Expired
	t.Deferred += o.Deferred
	t.InvalidTokens += o.InvalidTokens
	t.Arrivals += o.Arrivals
	if len(o.FailedBy) > 0 && t.FailedBy == nil {
		t.FailedBy = make(map[string]int64, len(o.FailedBy))
	}
	for k, v := range o.FailedBy {
		t.FailedBy[k] += v
	}
}

// IsZero says whether t counts nothing.
func (t Tally) IsZero() bool { return t.Equal(Tally{}) }

// Equal says whether t and o hold the same counts (a FailedBy entry of 0 equals none).
func (t Tally) Equal(o Tally) bool {
	if t.Targets != o.Targets || t.Sent != o.Sent || t.Failed != o.Failed || t.Expired != o.Expired ||
		t.Deferred != o.Deferred || t.InvalidTokens != o.InvalidTokens || t.Arrivals != o.Arrivals {
		return false
	}
	for k, v := range t.FailedBy {
		if o.FailedBy[k] != v {
			return false
		}
	}
	for k, v := range o.FailedBy {
		if t.FailedBy[k] != v {
			return false
		}
	}
	return true
}

// Fail counts one failed target with its failure class (FailureClass): Failed and FailedBy.
func (t *Tally) Fail(class string) {
	t.Failed++
	if t.FailedBy == nil {
		t.FailedBy = map[string]int64{}
	}
	t.FailedBy[class]++
}

// Counts are a push's tallies by delivery channel (ChannelAPNs, ChannelDirect, ...).
// Device-type totals derive from them: apns is iOS, every other channel Android.
type Counts map[string]Tally

// Add adds o into c.
func (c Counts) Add(o Counts) {
	for ch, t := range o {
		cur := c[ch]
		cur.Add(t)
		c[ch] = cur
	}
}

// Total sums every channel.
func (c Counts) Total() Tally {
	var t Tally
	for _, v := range c {
		t.Add(v)
	}
	return t
}

// Notification is a push record (the _Notification table).
type Notification struct {
	ObjectID       string    `json:"objectId"`
	AppID          string    `json:"appId"`
	NotificationID string    `json:"notificationId"`
	JobID          string    `json:"jobId"`
	Status         string    `json:"status"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`

	// The request as accepted.
	Kind               JobKind         `json:"kind"`
	Data               json.RawMessage `json:"data"`
	Where              json.RawMessage `json:"where,omitempty"`
	Channels           []string        `json:"channels,omitempty"`
	DeviceType         string          `json:"deviceType,omitempty"`
	DeviceCount        int             `json:"deviceCount,omitempty"` // devices pushes: how many ids were listed
	Prod               string          `json:"prod"`
	PushTime           time.Time       `json:"pushTime,omitzero"`
	ExpiresAt          time.Time       `json:"expiresAt,omitzero"`
	ExpirationInterval int64           `json:"expirationInterval,omitempty"`
	FlowControl        int             `json:"flowControl,omitempty"`
	ReqID              string          `json:"reqId,omitempty"`
	ChannelPolicy      string          `json:"channelPolicy,omitempty"` // channel_policy, a pushd extension
	MessageClass       string          `json:"messageClass,omitempty"`  // message_class, a pushd extension
	ScheduledID        int64           `json:"scheduledId,omitempty"`

	// Progress, filled by fan-out.
	Tasks     int      `json:"tasks"`
	TasksDone int      `json:"tasksDone"`
	Counts    Counts   `json:"counts,omitempty"`
	Errors    []string `json:"errors,omitempty"`
	// Stopped says why sending stopped early (daily volume reached, credentials rejected).
	Stopped string `json:"stopped,omitempty"`

	// TasksFinished lists the tasks whose counts are already in Counts (task ids without
	// their job id prefix): fan-out adds a task's counts in the same update that lists it,
	// so a task finished twice (redelivery after a crash) is counted once.
	TasksFinished []string `json:"tasksFinished,omitempty"`

	// PendingJob is the push's job while it waits for the planner: written in the same store
	// write as the record's in-queue status (at accept, or when a scheduled push fires), and
	// cleared by the planner in the write that takes the record in-process. A record that
	// holds one can always be sent: a crash between its write and the log append loses no
	// push, since a req_id retry or the re-driver (scheduler.Redriver) appends it again. The
	// store indexes records holding one (store.Store.PendingJobs). Never shown by the API.
	PendingJob *Job `json:"pendingJob,omitempty"`
	// PendingBy names the API process (one id per start) that wrote PendingJob and appends
	// it: a req_id retry served by that same process knows the append finished.
	PendingBy string `json:"pendingBy,omitempty"`
}

// PendingSince is when n's pending job became pending: the instant the store indexes it by.
func (n *Notification) PendingSince() time.Time {
	if n.PendingJob == nil {
		return time.Time{}
	}
	return n.PendingJob.QueryTime()
}

// Scheduled is a push waiting for its send time.
type Scheduled struct {
	ID        int64     `json:"id"` // unique across a cluster; the outer id of the REST shape
	AppID     string    `json:"appId"`
	DueAt     time.Time `json:"dueAt"`
	Job       Job       `json:"job"`
	CreatedAt time.Time `json:"createdAt"`
}
