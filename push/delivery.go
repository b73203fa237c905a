package push

import "time"

// Message is a push rendered for one delivery channel and environment: built once per
// (push, channel, environment) and shared, read-only, by every target of that channel.
type Message struct {
	Channel string
	// Body is the gateway-ready payload: the APNs JSON payload; for FCM and the vendors the
	// JSON of the message without its target token; for the own channel the frame's data.
	Body           []byte
	Silent         bool      // Android pass-through
	Priority       int       // APNs 10 or 5 (0: gateway default); FCM: 10 high, 5 normal
	PushType       string    // apns-push-type
	CollapseID     string    // apns-collapse-id / FCM collapse key
	Expiration     time.Time // zero: none
	Topic          string    // the request's topic, if any (a target's own topic wins otherwise)
	TeamID         string    // the request's apns_team_id
	AndroidChannel string    // _notificationChannel
}

// Target is one installation (or one listed device id) to deliver to.
type Target struct {
	ObjectID   string // "" for a listed device id with no stored installation
	DeviceType string
	Channel    string // ChannelAPNs, ChannelDirect, ChannelFCM, ChannelMi, ...
	DeviceID   string // deviceToken, registrationId or installationId
	Topic      string // apnsTopic of the installation
	TeamID     string // apnsTeamId of the installation
	Profile    string // deviceProfile ("" ⇒ _default for vendors; certificate choice for iOS)
	// InstallationID is set on a delivery with a Fallback: the own channel's device id.
	InstallationID string
}

// Delivery is one target and the message for it.
type Delivery struct {
	AppID                string
	NotificationObjectID string
	NotificationID       string
	Prod                 bool // APNs production environment
	Message              *Message
	Target               Target
	// Fallback is the own-channel message of a vendor_first delivery (PolicyVendorFirst):
	// a target its vendor refuses (DROP, QUOTA or FIX) goes to the own channel with it.
	Fallback *Message
	// InvalidateLater, on a delivery without a Fallback, leaves the deletion of a dead token's
	// installation to the caller: the sender reports it (OutcomeInvalidToken, Result.Since) and
	// deletes nothing. Fan-out deletes it once the outcome is durable (the checkpoint that
	// counts it), so that a crash before then re-sends the target instead of losing it from
	// the record's counts.
	InvalidateLater bool
}

// CallerInvalidates says whether the caller, not the sender, deletes the installation when the
// gateway reports d's token dead: InvalidateLater on a delivery without a Fallback (a
// vendor_first delivery's dead vendor token is always the sender's to drop).
func (d *Delivery) CallerInvalidates() bool { return d.InvalidateLater && d.Fallback == nil }

// Outcome is how a delivery ended.
type Outcome uint8

const (
	OutcomeSent         Outcome = iota + 1 // accepted by the gateway (own channel: written or cached)
	OutcomeFailed                          // permanent failure; Result.Reason says why
	OutcomeInvalidToken                    // the gateway says the token is dead: the sender deletes the installation, or the caller does (Delivery.InvalidateLater)
	OutcomeExpired                         // the push expired before it could be sent
	// OutcomeQueued: handed to the own-channel gateway on push.direct. Fan-out counts only the
	// target; the gateway counts it sent (written or cached) or expired on the record.
	OutcomeQueued
	// OutcomeDeferred: the vendor's quota for the app is spent (its reply, or the configured
	// budget): fan-out keeps the target for the next quota window (push/quota.go).
	OutcomeDeferred
)

func (o Outcome) String() string {
	switch o {
	case OutcomeSent:
		return "sent"
	case OutcomeFailed:
		return "failed"
	case OutcomeInvalidToken:
		return "invalid_token"
	case OutcomeExpired:
		return "expired"
	case OutcomeQueued:
		return "queued"
	case OutcomeDeferred:
		return "deferred"
	}
	return "unknown"
}

// Result is the final outcome of one delivery.
type Result struct {
	Outcome Outcome
	Reason  string // for failures: a short, token-free reason
	// Channel is the channel that carried the delivery when it is not the target's (a
	// vendor_first delivery that fell back to the own channel); "" otherwise.
	Channel string
	// Refused, on a delivery with a Fallback only, says the vendor refused the target for good
	// (a dead token, a refused message, or a spent quota): the sender's hint to fall back.
	Refused bool
	// Since is, for OutcomeInvalidToken, when the gateway learned the token was dead (zero
	// when it does not say): an installation refreshed after it keeps its token.
	Since time.Time
}
