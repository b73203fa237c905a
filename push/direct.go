package push

import (
	"encoding/json"
	"time"
)

// DirectMessage is one push for one own-channel device: the value of a push.direct record
// (fan-out → gateway) and of an offline-cache entry. ID is the push record's objectId, which
// is unique per push and therefore per (push, device): it is the message id the device acks,
// and the key that makes caching and counting idempotent when a record is consumed twice.
type DirectMessage struct {
	AppID          string          `json:"app"`
	InstallationID string          `json:"iid"`
	ID             string          `json:"id"`
	NotificationID string          `json:"nid"`
	Data           json.RawMessage `json:"data"`
	Expires        int64           `json:"exp,omitempty"` // unix milliseconds; 0: none
	// Seq orders a device's cached messages: set by the store when it caches the message.
	Seq int64 `json:"seq,omitempty"`
}

// Expired says whether m has expired at now.
func (m *DirectMessage) Expired(now time.Time) bool {
	return m.Expires != 0 && now.UnixMilli() >= m.Expires
}

// CacheOutcome is what caching one own-channel message did.
type CacheOutcome uint8

const (
	CacheStored    CacheOutcome = iota + 1 // cached now and counted sent on its record
	CacheDuplicate                         // already cached (or acked) before: nothing written
	CacheCancelled                         // its push record is gone (cancelled): not delivered
	CacheExpired                           // expired before it was cached: counted expired
)

// DevicePresence is what the store knows of an installation's own-channel connection: the
// node holding it (and since when) while connected, when it was last seen (the end of its
// last connection) and when it last acked a message. Zero times: never.
type DevicePresence struct {
	Node        string
	ConnectedAt time.Time
	LastSeen    time.Time
	LastAck     time.Time
}
