package direct

import (
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

// Events takes per-delivery events for the app's webhook (webhook.Dispatcher). Emit must not
// block: the gateway never waits for a webhook.
type Events interface {
	Enabled(appID string) bool
	Emit(ev webhook.Event) bool
}

// SetEvents makes the core emit the own channel's delivery events (sent when a message is
// cached, expired when it expired before, arrived when its device acks it) for each app with
// a webhook. Call it before Consume.
func (c *Core) SetEvents(ev Events) { c.events = ev }

// emit sends one event for message id of installation iid, if the app has a webhook.
func (c *Core) emit(typ webhook.Type, app, iid, id, nid string, at time.Time) {
	if c.events == nil || !c.events.Enabled(app) {
		return
	}
	c.events.Emit(webhook.Event{Type: typ, AppID: app, PushID: id, NotificationID: nid,
		Channel: push.ChannelDirect, InstallationID: iid, DeviceID: iid, At: at})
}
