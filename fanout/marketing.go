package fanout

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/VictoriaMetrics/metrics"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

// MarketingCounter counts marketing pushes against their devices' daily cap (store.Store's
// CountMarketing): one call per batch.
type MarketingCounter interface {
	CountMarketing(ctx context.Context, appID, day, pushID string, cap int, devices []string, allowed []bool) error
}

// marketingMetrics count the marketing targets the app's rules held, by reason.
type marketingMetrics struct {
	dailyCap, quietHours *metrics.Counter
}

func newMarketingMetrics(ms *metrics.Set) marketingMetrics {
	return marketingMetrics{
		dailyCap:   ms.NewCounter(`pushd_fanout_marketing_held_total{reason="daily_cap"}`),
		quietHours: ms.NewCounter(`pushd_fanout_marketing_held_total{reason="quiet_hours"}`),
	}
}

// marketingScratch is a batch's reusable room for CountMarketing's arguments.
type marketingScratch struct {
	devs    []string
	allowed []bool
}

// marketing applies the app's marketing rules (push.MarketingRules) to b's deliveries of a
// marketing push, on every channel alike: inside the quiet hours none is sent (reason
// quiet_hours); a device that had its day's cap of other marketing pushes is not sent (reason
// daily_cap). Those are counted failed with the reason; b.ds and b.ch keep the others, in
// order. A task run again meets the same counts: a device counted for this push stays allowed.
func (r *run) marketing(ctx context.Context, b *batch) error {
	rules := r.js.app.Settings.Marketing
	if r.js.class != push.ClassMarketing || rules == (push.MarketingRules{}) || len(b.ds) == 0 {
		return nil
	}
	now := r.w.clock.Now()
	if rules.Quiet(now) {
		r.countAll(b.ch, push.OutcomeFailed, push.ReasonQuietHours)
		r.w.mkm.quietHours.Add(len(b.ds))
		if r.ev != nil {
			r.emitAll(b.ds, webhook.Failed, push.ReasonQuietHours, now)
		}
		b.ds, b.ch = b.ds[:0], b.ch[:0]
		return nil
	}
	if rules.DailyCap <= 0 {
		return nil
	}
	n := len(b.ds)
	mk := &b.mk
	mk.devs, mk.allowed = mk.devs[:0], slices.Grow(mk.allowed[:0], n)[:n]
	for i := range b.ds {
		t := &b.ds[i].Target
		mk.devs = append(mk.devs, cmp.Or(t.ObjectID, t.DeviceID)) // a listed device id has no object
	}
	job := &r.t.Job
	if err := r.w.st.CountMarketing(ctx, job.AppID, rules.Day(now), job.NotificationObjectID, rules.DailyCap, mk.devs, mk.allowed); err != nil {
		return fmt.Errorf("cannot count the marketing pushes of task %s: %w", r.t.ID, err)
	}
	k, capped := 0, 0
	for i := range n {
		if mk.allowed[i] {
			b.ds[k], b.ch[k] = b.ds[i], b.ch[i]
			k++
			continue
		}
		capped++
		r.tl.count(b.ch[i], push.OutcomeFailed, push.ReasonDailyCap)
		if r.ev != nil {
			r.emitOne(&b.ds[i], webhook.Event{Type: webhook.Failed, Reason: push.ReasonDailyCap}, now)
		}
	}
	if capped > 0 {
		r.w.m.failed.Add(capped)
		r.w.mkm.dailyCap.Add(capped)
		r.addReason(push.ReasonDailyCap)
	}
	b.ds, b.ch = b.ds[:k], b.ch[:k]
	return nil
}
