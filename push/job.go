package push

import (
	"encoding/json"
	"time"
)

// JobKind says how a job selects its targets.
type JobKind string

const (
	JobQuery   JobKind = "query"   // POST /1.1/push: a where over installations
	JobDevices JobKind = "devices" // POST /1.1/push/devices: an explicit device-id list
)

// Job is an accepted push, written durably to the push.jobs log before the API answers.
// It carries everything fan-out needs, so no worker reads the request again.
type Job struct {
	ID                   string          `json:"id"` // unique; tasks derive their ids from it
	AppID                string          `json:"appId"`
	NotificationObjectID string          `json:"nobj"` // the push record's objectId
	NotificationID       string          `json:"nid"`  // custom or generated notification_id
	Kind                 JobKind         `json:"kind"`
	Where                json.RawMessage `json:"where,omitempty"`      // with channels already merged in
	DeviceType           string          `json:"deviceType,omitempty"` // devices jobs
	DeviceIDs            []string        `json:"deviceIds,omitempty"`  // devices jobs
	Vendor               string          `json:"vendor,omitempty"`     // devices jobs, hybrid Android
	DeviceProfile        string          `json:"deviceProfile,omitempty"`
	Data                 json.RawMessage `json:"data"`
	Prod                 string          `json:"prod"` // dev | prod
	Topic                string          `json:"topic,omitempty"`
	APNsTeamID           string          `json:"apnsTeamId,omitempty"`
	NotificationChannel  string          `json:"notificationChannel,omitempty"`
	ExpiresAt            time.Time       `json:"expiresAt,omitzero"`      // zero: no expiry
	FlowControl          int             `json:"flowControl,omitempty"`   // targets per second, 0 = off
	ChannelPolicy        string          `json:"channelPolicy,omitempty"` // "": the app's
	MessageClass         string          `json:"messageClass,omitempty"`  // "": the app's default (push/class.go)
	CreatedAt            time.Time       `json:"createdAt"`
	// QueryAt is when a scheduled push fired: the instant its where's relative times
	// ({"$relativeTime":"7 days ago"}) count from. Zero for a push sent at once, whose
	// relative times count from CreatedAt (see QueryTime).
	QueryAt time.Time `json:"queryAt,omitzero"`
}

// QueryTime is the instant the job's where is evaluated at: every task of the job reads its
// relative times from it, so they all select the same installations however long the fan-out
// takes.
func (j *Job) QueryTime() time.Time {
	if !j.QueryAt.IsZero() {
		return j.QueryAt
	}
	return j.CreatedAt
}

// Source is where a task reads its installations from.
type Source string

const (
	SourceBucket  Source = "bucket"  // by_bucket: every installation of the buckets
	SourceChannel Source = "channel" // by_channel: subscribers of one channel in the buckets
	SourcePoint   Source = "point"   // direct lookups by id
)

// Task is one unit of fan-out: a bucket range of one job (or a list of point ids). Its id is
// stable (job id + range) so consumers can de-duplicate redelivered tasks.
type Task struct {
	ID       string   `json:"id"`
	Job      Job      `json:"job"`
	Source   Source   `json:"source"`
	Channel  string   `json:"channel,omitempty"` // SourceChannel
	BucketLo int      `json:"lo"`                // inclusive
	BucketHi int      `json:"hi"`                // exclusive
	IDKind   IDKind   `json:"idKind,omitempty"`  // SourcePoint
	IDs      []string `json:"ids,omitempty"`     // SourcePoint
	Rate     float64  `json:"rate,omitempty"`    // this task's share of flow_control, targets/s
	Of       int      `json:"of"`                // how many tasks the job has
}

// TaskProgress is a task's checkpoint: the cursor after the last target whose delivery is
// final, and what has been counted so far.
type TaskProgress struct {
	JobID  string `json:"jobId"`
	TaskID string `json:"taskId"`
	Cursor []byte `json:"cursor,omitempty"`
	Done   bool   `json:"done"`
	Counts Counts `json:"counts"`
	Epoch  int64  `json:"epoch"`
}
