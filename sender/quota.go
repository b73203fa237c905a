package sender

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
)

// quotas remembers, per pool key (channel, app, credentials, profile), until when a vendor's
// daily quota is spent (gateway.KindQuota: vivo 10070, OPPO 33, ...). It lives in the
// Dispatcher, so a pool closed while idle and built again within the window stays parked.
// The vendors ask not to be called again until the window resets (vivo lowers an app's quota
// when it keeps calling, gateways.md §6.3).
type quotas struct {
	mu sync.Mutex
	m  map[poolKey]quotaPark // guarded by mu

	events Events // set once before the first Send (Dispatcher.SetEvents); nil: none
	// deferring (Dispatcher.SetDeferQuota, set before the first Send): a delivery of a parked
	// app+vendor ends at once as push.OutcomeDeferred, for fan-out to keep until the window
	// resets, instead of waiting in its pool.
	deferring bool
}

type quotaPark struct {
	until  time.Time
	reason string
}

func newQuotas() *quotas { return &quotas{m: make(map[poolKey]quotaPark)} }

// park records k's quota spent until until; it reports whether k was not parked already (the
// caller then logs and counts it once per window).
func (q *quotas) park(k poolKey, until time.Time, reason string, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	old, was := q.m[k]
	was = was && now.Before(old.until)
	if !was || until.After(old.until) {
		q.m[k] = quotaPark{until: until, reason: reason}
	}
	return !was
}

// has reports whether an app of channel is parked (or was, until parked forgets it).
func (q *quotas) has(channel string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k := range q.m {
		if k.channel == channel {
			return true
		}
	}
	return false
}

// quotaExpiredSuffix ends the reason of a delivery whose push expired while its app+vendor's
// daily quota was spent.
const quotaExpiredSuffix = ": the push expired while the vendor's daily quota was spent"

// parked returns k's park in force at now, forgetting one that ended.
func (q *quotas) parked(k poolKey, now time.Time) (quotaPark, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p, ok := q.m[k]
	if ok && !now.Before(p.until) {
		delete(q.m, k)
		return quotaPark{}, false
	}
	return p, ok
}

// lift ends k's park p (its window reset), unless a later park replaced it.
func (q *quotas) lift(k poolKey, p quotaPark) {
	q.mu.Lock()
	if q.m[k] == p {
		delete(q.m, k)
	}
	q.mu.Unlock()
}

// chinaTime is China Standard Time: the China vendors count their daily quotas by its days
// [unconfirmed: no vendor document names the time zone; their consoles show CST].
var chinaTime = time.FixedZone("CST", 8*3600)

// quotaReset is when a daily quota spent at now resets: after the gateway's hint when it
// gives one, else at the next midnight in China Standard Time.
func quotaReset(now time.Time, hint time.Duration) time.Time {
	if hint > 0 {
		return now.Add(hint)
	}
	y, m, d := now.In(chinaTime).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, chinaTime)
}

// parkQuota records a KindQuota reply of the pool: it parks the pool's app+vendor until the
// window resets, logging the first park of a window.
func (p *pool) parkQuota(reason string, hint time.Duration) {
	now := p.cfg.now()
	until := quotaReset(now, hint)
	if p.quota.park(p.key, until, reason, now) {
		p.m.quotaParks.Inc()
		p.log.Warn("vendor daily quota spent: the app's deliveries of this vendor wait until the quota window resets (or their push expires)",
			zap.String("reason", reason), zap.Time("until", until))
	}
}

// waitQuota holds a delivery while its pool's quota is spent: until the window resets (done
// false, waited true: the caller attempts it with a new retry horizon), or until its push
// expires if that comes first: then it is failed with the quota reason (done true). A
// delivery without expiration waits for the reset.
func (p *pool) waitQuota(ctx context.Context, dl *push.Delivery) (res push.Result, final, done, waited bool) {
	exp := dl.Message.Expiration
	qp, ok := p.quota.parked(p.key, p.cfg.now())
	if !ok {
		return push.Result{}, false, false, false
	}
	now := p.cfg.now()
	p.quota.deferred(dl, qp.reason, now)
	expiresFirst := !exp.IsZero() && !exp.After(qp.until)
	wait := qp.until.Sub(now)
	if expiresFirst {
		wait = exp.Sub(now)
	}
	p.m.quotaParked.Inc()
	err := p.cfg.sleep(ctx, wait)
	p.m.quotaParked.Dec()
	switch {
	case err != nil:
		return push.Result{Outcome: push.OutcomeFailed, Reason: "canceled"}, false, true, true
	case expiresFirst:
		return push.Result{Outcome: push.OutcomeFailed, Reason: qp.reason + quotaExpiredSuffix}, true, true, true
	}
	p.quota.lift(p.key, qp)
	return push.Result{}, false, false, true
}

// vendorRates are the app's per-channel rates with its vendor quotas' per-second limits
// (settings.vendorQuotas.<vendor>.perSecond) applied: the lower of the two wins.
func vendorRates(r push.ChannelRates, q *push.VendorQuotas) push.ChannelRates {
	lower := func(cur *float64, ps float64) {
		if ps > 0 && (*cur <= 0 || ps < *cur) {
			*cur = ps
		}
	}
	lower(&r.HMS, q.HMS.PerSecond)
	lower(&r.Honor, q.Honor.PerSecond)
	lower(&r.Mi, q.Mi.PerSecond)
	lower(&r.Mz, q.Mz.PerSecond)
	lower(&r.Oppo, q.Oppo.PerSecond)
	lower(&r.Vivo, q.Vivo.PerSecond)
	return r
}
