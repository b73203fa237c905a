package sender

import (
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

// Events takes per-delivery events for the app's webhook (webhook.Dispatcher). Emit must not
// block: a delivery never waits for a webhook.
type Events interface {
	Enabled(appID string) bool
	Emit(ev webhook.Event) bool
}

// SetEvents makes the pools report each delivery held back by a spent vendor quota as
// deferred, for the apps with a webhook (its final outcome is fan-out's to report). Call it
// before the first Send.
func (d *Dispatcher) SetEvents(ev Events) { d.quota.events = ev }

// SetDeferQuota makes a spent vendor quota end the app+vendor's deliveries at once as
// push.OutcomeDeferred (fan-out keeps them in the store until the window resets, issue 20
// item 2) instead of holding them in the pool. Call it before the first Send.
func (d *Dispatcher) SetDeferQuota() { d.quota.deferring = true }

// deferred reports dl as deferred by a spent quota (reason: the vendor's answer).
func (q *quotas) deferred(dl *push.Delivery, reason string, at time.Time) {
	if q.events == nil || !q.events.Enabled(dl.AppID) {
		return
	}
	q.events.Emit(webhook.Event{Type: webhook.Deferred, AppID: dl.AppID, PushID: dl.NotificationObjectID,
		NotificationID: dl.NotificationID, Channel: dl.Target.Channel, InstallationID: dl.Target.ObjectID,
		DeviceID: dl.Target.DeviceID, Reason: reason, At: at})
}
