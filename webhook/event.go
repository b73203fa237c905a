package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/pushd/pushd/push"
)

// Type is what happened to one delivery.
type Type uint8

const (
	Sent     Type = iota + 1 // accepted by the gateway; own channel: cached (and written if connected)
	Arrived                  // the device acked it (own channel)
	Failed                   // not delivered, Reason says why
	Expired                  // the push expired before it could be sent
	Deferred                 // held back by a vendor quota until its window resets
)

func (t Type) String() string {
	switch t {
	case Sent:
		return "sent"
	case Arrived:
		return "arrived"
	case Failed:
		return "failed"
	case Expired:
		return "expired"
	case Deferred:
		return "deferred"
	}
	return "unknown"
}

// Event is one delivery event as emitters hand it over. It is a plain value: emitting one
// copies it into the buffer and allocates nothing; the id and the token hash are computed by
// the dispatcher when the batch is encoded.
type Event struct {
	Type           Type
	AppID          string
	PushID         string // the push record's objectId
	NotificationID string
	Channel        string
	InstallationID string // "" for a listed device id with no stored installation
	DeviceID       string // token, registration id, or (own channel) the installation id
	Reason         string // Failed, Deferred
	At             time.Time
}

// Wire is an event as the receiver gets it (docs/decisions.md, "Receipts out").
type Wire struct {
	ID             string `json:"id"`
	Type           string `json:"type"`
	AppID          string `json:"appId"`
	InstallationID string `json:"installationId,omitempty"`
	TokenHash      string `json:"tokenHash"`
	PushID         string `json:"pushId"`
	NotificationID string `json:"notificationId,omitempty"`
	Channel        string `json:"channel"`
	Time           string `json:"time"`
	Reason         string `json:"reason,omitempty"`
}

// Batch is the body of one webhook request.
type Batch struct {
	AppID  string `json:"appId"`
	Events []Wire `json:"events"`
}

// ID is the event's stable id: the same delivery event has the same id however often it is
// emitted (a retried fan-out batch, a repeated ack), so a receiver de-duplicates by it.
func (e *Event) ID() string {
	h := sha256.New()
	for _, s := range [...]string{e.Type.String(), e.AppID, e.PushID, e.Channel, e.DeviceID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// TokenHash is the hex SHA-256 of a device id: it identifies a device without revealing its
// token.
func TokenHash(deviceID string) string {
	sum := sha256.Sum256([]byte(deviceID))
	return hex.EncodeToString(sum[:])
}

// ToWire is e as the receiver gets it.
func (e *Event) ToWire() Wire {
	return Wire{
		ID:             e.ID(),
		Type:           e.Type.String(),
		AppID:          e.AppID,
		InstallationID: e.InstallationID,
		TokenHash:      TokenHash(e.DeviceID),
		PushID:         e.PushID,
		NotificationID: e.NotificationID,
		Channel:        e.Channel,
		Time:           push.FormatTime(e.At),
		Reason:         e.Reason,
	}
}
