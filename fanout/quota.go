package fanout

import (
	"context"
	"fmt"
	"time"

	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

// Vendor quota accounting (issue 20 item 2; docs/decisions.md "Vendor quota accounting").
//
// Before a batch goes to the sender, each vendor channel's targets reserve units of the app's
// configured daily budget (settings.vendorQuotas, per message class) in the store, cluster-wide.
// The targets that do not fit are not thrown at the vendor: a vendor_first target goes to the
// own channel, every other one is deferred: written to the store's deferred table (synced),
// counted Deferred on its vendor, reported `deferred` to the webhook, and sent by the
// Deferrals re-driver once its window ends. A vendor that answers that its quota is spent
// (the sender's OutcomeDeferred) defers the target the same way and marks the budget's day
// spent for every node.
//
// Order, for a kill -9: the deferred rows are written before the batch is counted, and the
// batch is counted (checkpointed) only after. A crash between the two repeats the batch from
// the last checkpoint: a target deferred again overwrites its row (same window and key), one
// that fits the second time leaves a row the re-driver sends once more (at least once, as
// every crash repeat) without counting it a second time (Deferrals.finish).

// fpWorkerAfterDefer is hit once a batch's deferred targets are durable, before the batch is
// counted or sent.
var fpWorkerAfterDefer = faultpoint.Define("fanout/worker-after-defer")

// Quotas is the store's vendor-quota side: an optional capability of the WorkerStore
// (store.Store has it); without it nothing is counted against a vendor budget or deferred.
type Quotas interface {
	ReserveVendorQuota(ctx context.Context, appID, budget, day string, want, limit int64, until time.Time) (int64, error)
	SpendVendorQuota(ctx context.Context, appID, budget, day string, until time.Time) error
	PutDeferred(ctx context.Context, ds []push.Deferred) error
}

// ReasonQuotaBudget is the deferral reason of a target over the app's configured budget.
const ReasonQuotaBudget = "vendor daily quota of the app's settings spent"

// budget is one vendor channel's quota window as a run sees it.
type budget struct {
	class string // the quota class counted (push.ClassSystem or ClassMarketing)
	name  string // the store's budget key: vendor/class
	limit int64  // 0: none configured (only a vendor's reply defers)
	day   string // the quota day, in the vendor's zone
	end   time.Time
}

// budgetOf is the quota window of vendor channel ch for app at now (nil for a channel without
// quotas).
func budgetOf(app *push.App, ch, class string, now time.Time) (*budget, error) {
	if !push.IsVendor(ch) {
		return nil, nil
	}
	vq := app.Settings.VendorQuotas.Of(ch)
	loc, err := vq.Location()
	if err != nil {
		return nil, fmt.Errorf("cannot read the %s quota of app %s: %w", ch, app.ID, err)
	}
	qc := vq.QuotaClass(class)
	b := &budget{class: qc, name: ch + "/" + qc, limit: vq.Limit(class)}
	b.day, b.end = push.QuotaWindow(now, loc)
	return b, nil
}

// admitQuotas reserves the budget of b's vendor targets and takes out of the batch those that
// do not fit: deferred (written, counted into r.tl, reported) or, under vendor_first, moved
// to the own channel. It returns the deliveries to send; b.ds and b.ch shrink to them.
func (r *run) admitQuotas(ctx context.Context, b *batch) ([]push.Delivery, error) {
	q, ok := r.w.st.(Quotas)
	if !ok {
		return b.ds, nil
	}
	now := r.w.clock.Now()
	var need, left [nChannels]int64
	var bud [nChannels]*budget
	any := false
	for i := range b.ds {
		ci := b.ch[i]
		if need[ci] == 0 {
			bu, err := budgetOf(&r.js.app, channelNames[ci], push.MessageClassOf(&r.t.Job, &r.js.app), now)
			if err != nil {
				return nil, err
			}
			if bu == nil || bu.limit <= 0 {
				need[ci] = -1 // no budget to count
				continue
			}
			bud[ci] = bu
		}
		if need[ci] >= 0 {
			need[ci]++
			any = true
		}
	}
	if !any {
		return b.ds, nil
	}
	job := &r.t.Job
	for ci, n := range need {
		if n <= 0 {
			continue
		}
		bu := bud[ci]
		g, err := q.ReserveVendorQuota(ctx, job.AppID, bu.name, bu.day, n, bu.limit, bu.end)
		if err != nil {
			return nil, fmt.Errorf("cannot count the %s quota of task %s: %w", bu.name, r.t.ID, err)
		}
		left[ci] = g
	}
	var rows []push.Deferred
	k := 0
	for i := range b.ds {
		d, ci := b.ds[i], b.ch[i]
		if need[ci] > 0 {
			switch {
			case left[ci] > 0:
				left[ci]--
			case d.Fallback != nil && d.Target.InstallationID != "":
				// vendor_first: the own channel takes what the vendor's budget cannot.
				d = ownDelivery(d, d.Fallback)
				ci = channelIndex(push.ChannelDirect)
				r.w.m.quotaFallbacks.Inc()
			default:
				rows = append(rows, r.deferredRow(&d, bud[ci], ReasonQuotaBudget))
				continue
			}
		}
		b.ds[k], b.ch[k] = d, ci
		k++
	}
	if len(rows) > 0 {
		if err := r.defer_(ctx, q, rows); err != nil {
			return nil, err
		}
		fpWorkerAfterDefer.Hit()
	}
	b.ds, b.ch = b.ds[:k], b.ch[:k]
	return b.ds, nil
}

// ownDelivery is d sent on the own channel with msg: by installation id, without fallback.
func ownDelivery(d push.Delivery, msg *push.Message) push.Delivery {
	d.Message, d.Fallback = msg, nil
	d.Target.Channel = push.ChannelDirect
	d.Target.DeviceID = d.Target.InstallationID
	d.Target.InstallationID = ""
	return d
}

// deferredRow is the deferred row of d, waiting for bu's window to end.
func (r *run) deferredRow(d *push.Delivery, bu *budget, reason string) push.Deferred {
	row := push.Deferred{
		AppID: d.AppID, Vendor: d.Target.Channel, Class: bu.class, Until: bu.end,
		PushID: d.NotificationObjectID, NotificationID: d.NotificationID, Prod: d.Prod,
		Policy: r.js.policy, Target: d.Target, Message: d.Message, Reason: reason,
	}
	if d.Target.InstallationID != "" && push.AdmitsHybrid(r.js.policy) {
		row.Own = r.js.message(channelIndex(push.ChannelDirect))
	}
	return row
}

// defer_ writes rows durably, then counts them Deferred (into r.tl) and reports them.
func (r *run) defer_(ctx context.Context, q Quotas, rows []push.Deferred) error {
	if err := q.PutDeferred(ctx, rows); err != nil {
		return fmt.Errorf("cannot defer %d targets of task %s: %w", len(rows), r.t.ID, err)
	}
	now := r.w.clock.Now()
	for i := range rows {
		d := &rows[i]
		r.tl.count(channelIndex(d.Vendor), push.OutcomeDeferred, "")
		if r.ev != nil {
			r.ev.Emit(deferredEvent(d, webhook.Deferred, d.Reason, now))
		}
	}
	r.w.m.deferred.Add(len(rows))
	return nil
}

// deferReplies defers the deliveries of b the sender answered OutcomeDeferred (their vendor
// said its quota is spent): their budget's day is marked spent for every node, and they are
// written like the targets over a configured budget. Called before b is counted.
func (r *run) deferReplies(ctx context.Context, b *batch, res []push.Result) error {
	var rows []push.Deferred
	var spent [nChannels]bool
	q, ok := r.w.st.(Quotas)
	now := r.w.clock.Now()
	for i := range res {
		if res[i].Outcome != push.OutcomeDeferred {
			continue
		}
		if !ok {
			// No store to keep it: a failure with the vendor's reason, as before deferral existed.
			res[i] = push.Result{Outcome: push.OutcomeFailed, Reason: res[i].Reason}
			continue
		}
		d := &b.ds[i]
		bu, err := budgetOf(&r.js.app, d.Target.Channel, push.MessageClassOf(&r.t.Job, &r.js.app), now)
		if err != nil || bu == nil {
			res[i] = push.Result{Outcome: push.OutcomeFailed, Reason: res[i].Reason}
			continue
		}
		if ci := b.ch[i]; !spent[ci] && bu.limit > 0 {
			spent[ci] = true
			if err := q.SpendVendorQuota(ctx, d.AppID, bu.name, bu.day, bu.end); err != nil {
				return fmt.Errorf("cannot mark the %s quota of task %s spent: %w", bu.name, r.t.ID, err)
			}
		}
		rows = append(rows, r.deferredRow(d, bu, res[i].Reason))
	}
	if len(rows) == 0 {
		return nil
	}
	if err := q.PutDeferred(ctx, rows); err != nil {
		return fmt.Errorf("cannot defer %d targets of task %s: %w", len(rows), r.t.ID, err)
	}
	fpWorkerAfterDefer.Hit()
	r.w.m.deferred.Add(len(rows))
	return nil
}

// deferredEvent is the webhook event of type typ for the deferred target d.
func deferredEvent(d *push.Deferred, typ webhook.Type, reason string, at time.Time) webhook.Event {
	return webhook.Event{Type: typ, AppID: d.AppID, PushID: d.PushID, NotificationID: d.NotificationID,
		Channel: d.Vendor, InstallationID: d.Target.ObjectID, DeviceID: d.Target.DeviceID, Reason: reason, At: at}
}
