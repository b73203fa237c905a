package fanout

import (
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

// Events takes per-delivery events for the app's webhook (webhook.Dispatcher). Emit must not
// block: delivery never waits for a webhook.
type Events interface {
	Enabled(appID string) bool
	Emit(ev webhook.Event) bool
}

// SetEvents makes the worker emit a webhook event per delivery outcome of each app with a
// webhook. Call it before Run.
func (w *Worker) SetEvents(ev Events) { w.events = ev }

// eventsFor returns where the run's delivery events go: nil when the app has no webhook, so
// that a push of such an app does no per-delivery work for it.
func (w *Worker) eventsFor(appID string) Events {
	if w.events == nil || !w.events.Enabled(appID) {
		return nil
	}
	return w.events
}

// emit sends one event per delivery of ds whose result is final here; own-channel
// deliveries handed to the gateway (OutcomeQueued) are the gateway's to report.
func (r *run) emit(ds []push.Delivery, res []push.Result, at time.Time) {
	for i := range ds {
		ev := webhook.Event{Reason: res[i].Reason}
		switch res[i].Outcome {
		case push.OutcomeSent:
			ev.Type, ev.Reason = webhook.Sent, ""
		case push.OutcomeExpired:
			ev.Type, ev.Reason = webhook.Expired, ""
		case push.OutcomeQueued:
			continue
		case push.OutcomeDeferred:
			ev.Type = webhook.Deferred
		case push.OutcomeInvalidToken:
			ev.Type = webhook.Failed
			if ev.Reason == "" {
				ev.Reason = "invalid token"
			}
		default:
			ev.Type = webhook.Failed
			if ev.Reason == "" {
				ev.Reason = "failed without a reason"
			}
		}
		r.emitOne(&ds[i], ev, at)
	}
}

// emitAll sends one event of typ (with reason) per delivery of ds.
func (r *run) emitAll(ds []push.Delivery, typ webhook.Type, reason string, at time.Time) {
	for i := range ds {
		r.emitOne(&ds[i], webhook.Event{Type: typ, Reason: reason}, at)
	}
}

func (r *run) emitOne(d *push.Delivery, ev webhook.Event, at time.Time) {
	ev.AppID = d.AppID
	ev.PushID = d.NotificationObjectID
	ev.NotificationID = d.NotificationID
	ev.Channel = d.Target.Channel
	ev.InstallationID = d.Target.ObjectID
	ev.DeviceID = d.Target.DeviceID
	ev.At = at
	r.ev.Emit(ev)
}
