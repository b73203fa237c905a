package sender

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// poolKey names one pool. fingerprint changes when the app's credentials of the channel change.
type poolKey struct {
	channel, appID, fingerprint, route string
}

// item is one queued delivery: by value in the queue, so queueing allocates nothing.
type item struct {
	ctx context.Context // the Send call's
	d   *push.Delivery
	i   int
	b   *batch
	// first, when set, is the gateway's answer to d's first attempt, made in a batch
	// (sendBatch): the worker goes on from it instead of sending d again.
	first    gateway.Reply
	hasFirst bool
}

// pool delivers over one route. Workers start on demand up to cfg.Workers and live as long
// as the pool.
type pool struct {
	key    poolKey
	cfg    *Config
	client client
	inv    TokenInvalidator
	m      *channelMetrics
	log    *zap.Logger
	bucket *bucket // rate 0: no rate limit
	rate   float64 // the bucket's cluster-wide rate; guarded by Dispatcher.mu

	queue  chan item
	batch  batchClient     // set when the client sends batches (sendBatch)
	ctx    context.Context // cancelled by close: stops the workers
	cancel context.CancelFunc
	wg     sync.WaitGroup

	workers atomic.Int32
	idle    atomic.Int32
	// pending counts deliveries handed to the pool and not yet final; it is incremented under
	// Dispatcher.mu, so the janitor (also under Dispatcher.mu) never closes a pool in use.
	pending  atomic.Int64
	lastUsed atomic.Int64 // unix nanos

	broken  atomic.Pointer[string] // breaker: the credential rejection reason
	sent    atomic.Int64           // successes (InvalidGuard, TokenScoped)
	invalid atomic.Int64           // dead-token replies (InvalidGuard)
	guard   sync.Once
	lastLog atomic.Int64 // unix nanos of the last sampled log line

	gate  gate    // is the gateway down? parks deliveries while it is
	quota *quotas // the dispatcher's: is the app's vendor quota spent? (quota.go)
}

func newPool(key poolKey, cl client, cfg *Config, rate float64, inv TokenInvalidator, m *channelMetrics, log *zap.Logger, q *quotas) *pool {
	p := &pool{
		key: key, cfg: cfg, client: cl, inv: inv, m: m, quota: q,
		log:   log.With(zap.String("app_id", key.appID), zap.String("vendor", key.channel), zap.String("route", key.route)),
		queue: make(chan item, cfg.QueueSize),
	}
	if bc, ok := cl.(batchClient); ok && bc.CanBatch() {
		p.batch = bc
	}
	p.bucket, p.rate = newBucket(rate, cfg.Burst, cfg.Share, cfg.now), rate
	p.gate.init()
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.lastUsed.Store(cfg.now().UnixNano())
	m.pools.Inc()
	m.capacity.Add(float64(cfg.Workers))
	return p
}

// ensureWorker starts a worker when the queue holds more deliveries than idle workers.
func (p *pool) ensureWorker() {
	for int(p.idle.Load()) < len(p.queue) {
		n := p.workers.Load()
		if int(n) >= p.cfg.Workers {
			return
		}
		if p.workers.CompareAndSwap(n, n+1) {
			p.idle.Add(1)
			p.wg.Add(1)
			go p.work()
		}
	}
}

func (p *pool) work() {
	defer p.wg.Done()
	for {
		select {
		case it := <-p.queue:
			p.idle.Add(-1)
			var first *gateway.Reply
			if it.hasFirst {
				first = &it.first
			}
			r, final := p.deliverFrom(it.ctx, it.d, first, true)
			if final {
				p.m.outcome(r.Outcome)
			}
			// Done before the result is handed back: once Send returns, the pool counts
			// as used at this time with nothing pending (closeIdle reads both).
			p.done()
			it.b.finish(it.i, r, final)
			p.idle.Add(1)
		case <-p.ctx.Done():
			return
		}
	}
}

// done ends one pending delivery.
func (p *pool) done() {
	p.lastUsed.Store(p.cfg.now().UnixNano())
	p.pending.Add(-1)
	p.m.queued.Dec()
}

// close stops the workers and the connections. Idle pools have nothing in flight; when the
// dispatcher closes, its context has already aborted the requests.
func (p *pool) close() {
	p.cancel()
	p.wg.Wait()
	for len(p.queue) > 0 { // only when the dispatcher closes: their Send calls return ErrClosed
		it := <-p.queue
		it.b.finish(it.i, push.Result{Outcome: push.OutcomeFailed, Reason: "sender closed"}, false)
		p.pending.Add(-1)
		p.m.queued.Dec()
	}
	p.client.Close()
	if p.gate.isDown.Load() {
		p.m.down.Dec()
	}
	p.m.pools.Dec()
	p.m.capacity.Add(-float64(p.cfg.Workers))
}

// rejected is the fail-fast result of a pool stopped by its breaker, or false.
func (p *pool) rejected() (push.Result, bool) {
	if r := p.broken.Load(); r != nil {
		p.m.rejections.Inc()
		return push.Result{Outcome: push.OutcomeFailed, Reason: "credentials rejected: " + *r}, true
	}
	return push.Result{}, false
}

// trip opens the breaker; the first trip is logged for a human to fix the credentials.
func (p *pool) trip(reason string) {
	if p.broken.CompareAndSwap(nil, &reason) {
		p.m.trips.Inc()
		p.log.Error("gateway rejected the app's credentials: pool stopped until they change", zap.String("reason", reason))
	}
}

// deliverFrom runs the attempts of one delivery. ctx is the Send call's, merged with the
// dispatcher's life (Close aborts requests and backoffs). final is false when ctx ended
// first: the result is then not counted (the batch is abandoned). When first is set, the
// first attempt was already made (in a batch, sendBatch) and answered first: it goes on from
// that answer; recorded says the gate was told first already.
//
// Retryable replies are retried with backoff until the delivery's deadline: its expiration
// (then it is expired, not failed) or RetryHorizon after its first attempt, whichever comes
// first. While the pool's gateway is down the delivery parks instead (see gate).
func (p *pool) deliverFrom(ctx context.Context, d *push.Delivery, first *gateway.Reply, recorded bool) (res push.Result, final bool) {
	canceled := push.Result{Outcome: push.OutcomeFailed, Reason: "canceled"}
	if ctx.Err() != nil {
		return canceled, false
	}
	exp := d.Message.Expiration
	var deadline time.Time
	var expiresFirst bool
	// setDeadline starts the retry horizon: at the first attempt, and again after a quota park.
	setDeadline := func() {
		deadline = p.cfg.now().Add(p.cfg.RetryHorizon)
		expiresFirst = !exp.IsZero() && exp.Before(deadline)
		if expiresFirst {
			deadline = exp
		}
	}
	setDeadline()
	var lastReason string
	// late is the result of a delivery whose deadline came before it could be sent.
	late := func() (push.Result, bool) {
		if expiresFirst {
			return push.Result{Outcome: push.OutcomeExpired}, true
		}
		reason := lastReason
		if reason == "" {
			reason = p.outageReason()
		}
		p.sampled("delivery failed: the gateway did not take it within the retry horizon", zap.String("reason", reason))
		return push.Result{Outcome: push.OutcomeFailed, Reason: "gateway unavailable for the retry horizon (" + p.cfg.RetryHorizon.String() + "): " + reason}, true
	}

	authRetried := false
	for attempt := 1; ; attempt++ {
		var rep gateway.Reply
		probe, record := false, true
		if first != nil {
			// answered in a batch (sendBatch), which made the checks before it
			rep, first, record = *first, nil, !recorded
		} else {
			if r, ok := p.rejected(); ok {
				return r, true
			}
			if d.Fallback != nil {
				// vendor_first: a spent quota is a refusal the own channel takes over, not a wait.
				if qp, ok := p.quota.parked(p.key, p.cfg.now()); ok {
					return push.Result{Outcome: push.OutcomeFailed, Reason: qp.reason, Refused: true}, true
				}
			}
			if p.quota.deferring {
				// Fan-out keeps it until the window resets (Dispatcher.SetDeferQuota).
				if qp, ok := p.quota.parked(p.key, p.cfg.now()); ok {
					return push.Result{Outcome: push.OutcomeDeferred, Reason: qp.reason}, true
				}
			}
			// Before the expiry check: a delivery whose push expires while the quota is spent
			// fails with the quota's reason.
			r, final, done, waited := p.waitQuota(ctx, d)
			if done {
				return r, final
			}
			if !exp.IsZero() && !p.cfg.now().Before(exp) {
				return push.Result{Outcome: push.OutcomeExpired}, true
			}
			if waited { // the quota window reset: a new retry horizon
				setDeadline()
			}
			var err error
			probe, err = p.admit(ctx, deadline)
			switch {
			case errors.Is(err, errDeadline):
				return late()
			case err != nil:
				return canceled, false
			}
			if w := p.bucket.reserve(); w > 0 {
				if p.cfg.sleep(ctx, w) != nil {
					if probe {
						p.release()
					}
					return canceled, false
				}
				if !exp.IsZero() && !p.cfg.now().Before(exp) {
					if probe {
						p.release()
					}
					return push.Result{Outcome: push.OutcomeExpired}, true // expired while rate-limited
				}
			}
			p.m.inflight.Inc()
			rep = p.client.Send(ctx, d)
			p.m.inflight.Dec()
			if rep.Kind == gateway.KindRetry && ctx.Err() != nil {
				if probe {
					p.release()
				}
				return canceled, false // our own cancel, not the gateway's answer
			}
		}
		if record {
			p.record(rep, probe, p.cfg.now())
		}
		switch rep.Kind {
		case gateway.KindSent:
			p.sent.Add(1)
			return push.Result{Outcome: push.OutcomeSent}, true
		case gateway.KindInvalidToken:
			// Guard while dead-token replies outnumber successes (gateways.md §0: circuit-break
			// when the DROP ratio spikes), not only before the first success: a dev push that
			// reaches a few sandbox devices and many production tokens must not delete those.
			if n := p.invalid.Add(1); p.cfg.InvalidGuard > 0 && n > int64(p.cfg.InvalidGuard) && n > p.sent.Load() {
				p.guarded(rep.Reason)
				return push.Result{Outcome: push.OutcomeFailed, Reason: rep.Reason + ": not deleted, the gateway rejects most tokens of this pool (wrong environment or credentials?)", Refused: d.Fallback != nil}, true
			}
			if !d.CallerInvalidates() {
				p.invalidate(ctx, d, rep)
			}
			return push.Result{Outcome: push.OutcomeInvalidToken, Reason: rep.Reason, Refused: d.Fallback != nil, Since: rep.Since}, true
		case gateway.KindFailed:
			return push.Result{Outcome: push.OutcomeFailed, Reason: rep.Reason, Refused: d.Fallback != nil}, true
		case gateway.KindCredentials:
			return p.credentialsResult(rep), true
		case gateway.KindQuota:
			// The vendor's daily quota is spent: park the app+vendor (quota.go); this delivery
			// waits for the reset (or fails when its push expires first) in waitQuota; one with an
			// own-channel fallback (vendor_first) is refused at the top of the loop instead.
			p.parkQuota(rep.Reason, rep.RetryAfter)
			attempt--
			continue
		case gateway.KindAuth:
			if !authRetried { // the client dropped its token: one retry with a fresh one
				authRetried = true
				attempt--
				continue
			}
			p.trip(rep.Reason)
			return push.Result{Outcome: push.OutcomeFailed, Reason: "credentials rejected: " + rep.Reason}, true
		}
		// gateway.KindRetry (and any unknown kind)
		lastReason = rep.Reason
		if probe && p.pastHorizon(p.cfg.now()) {
			// It probed a gateway down for longer than the retry horizon: it ends now, as the
			// deliveries that were not the probe do, instead of retrying (and maybe probing
			// again) until its own deadline.
			return late()
		}
		delay := p.backoff(attempt)
		if rep.RetryAfter > delay {
			delay = rep.RetryAfter
		}
		if !p.cfg.now().Add(delay).Before(deadline) {
			return late() // the next attempt would come after the deadline
		}
		p.m.retries.Inc()
		if p.cfg.sleep(ctx, delay) != nil {
			return canceled, false
		}
	}
}

// credentialsResult is the result of a KindCredentials reply; it opens the breaker unless the
// reply may be about this one token of a pool whose credentials are proven.
func (p *pool) credentialsResult(rep gateway.Reply) push.Result {
	if rep.TokenScoped && p.sent.Load() > 0 {
		return push.Result{Outcome: push.OutcomeFailed, Reason: rep.Reason}
	}
	p.trip(rep.Reason)
	return push.Result{Outcome: push.OutcomeFailed, Reason: "credentials rejected: " + rep.Reason}
}

// backoff is the delay before retry number attempt: exponential, capped, with jitter
// (half fixed, half random) so that a brownout's retries do not arrive in lockstep.
func (p *pool) backoff(attempt int) time.Duration {
	d := p.cfg.BaseBackoff << min(attempt-1, 30)
	if d > p.cfg.MaxBackoff || d <= 0 {
		d = p.cfg.MaxBackoff
	}
	half := d / 2
	return half + rand.N(half+1)
}

// guarded logs, once per pool, that deletions stopped: a gateway calling every token of an app
// dead usually means a configuration error (gateways.md §0), not dead tokens.
func (p *pool) guarded(reason string) {
	p.guard.Do(func() {
		p.log.Error("gateway rejects most tokens of the pool (more dead-token replies than successes): installations are no longer deleted; check the app's environment and credentials",
			zap.String("reason", reason), zap.Int("deleted", p.cfg.InvalidGuard))
	})
}

func (p *pool) invalidate(ctx context.Context, d *push.Delivery, rep gateway.Reply) {
	if p.inv == nil {
		return
	}
	drop := p.inv.InvalidateToken
	if d.Fallback != nil && d.Target.ObjectID != "" {
		// vendor_first: the message goes to the own channel (direct.Handoff), where the
		// installation stays reachable; only its vendor token is dead.
		drop = p.inv.DropVendorToken
	}
	if err := drop(ctx, d.AppID, d.Target.ObjectID, d.Target.DeviceID, rep.Since); err != nil {
		p.m.invErrors.Inc()
		p.sampled("cannot delete an installation with a dead token", zap.String("reason", rep.Reason), zap.Error(err))
	}
}

// logEvery is the sampling period of the per-pool warnings: hot-path failures are counted,
// and at most one line per pool per period says what is happening.
const logEvery = 10 * time.Second

func (p *pool) sampled(msg string, fields ...zap.Field) {
	now := p.cfg.now().UnixNano()
	last := p.lastLog.Load()
	if now-last < int64(logEvery) || !p.lastLog.CompareAndSwap(last, now) {
		return
	}
	p.log.Warn(msg+" (sampled)", fields...)
}

// bucket is a token bucket; reserve takes one token, going into debt, and says how long the
// caller waits for it, so waiting callers are served in order without a lock held while waiting.
// rate is cluster-wide: the bucket fills at rate × share(), this node's part, read at each
// reserve so a node joining or leaving changes every pool's pace at once.
type bucket struct {
	mu     sync.Mutex
	rate   float64 // cluster-wide tokens/s; 0: unlimited
	burst  float64 // configured depth; 0: a tenth of the node's rate, at least 1
	share  func() float64
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newBucket(rate float64, burst int, share func() float64, now func() time.Time) *bucket {
	if share == nil {
		share = func() float64 { return 1 }
	}
	b := &bucket{rate: rate, burst: float64(burst), share: share, last: now(), now: now}
	b.tokens = b.depth(rate * share())
	return b
}

func (b *bucket) depth(eff float64) float64 {
	if b.burst > 0 {
		return b.burst
	}
	return max(1, eff/10)
}

// setRate changes the cluster-wide rate (an app's SenderRates changed).
func (b *bucket) setRate(r float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate <= 0 && r > 0 {
		b.tokens, b.last = b.depth(r*b.share()), b.now()
	}
	b.rate = r
}

// limited says whether the bucket paces (a rate is set).
func (b *bucket) limited() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rate > 0
}

func (b *bucket) reserve() time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate <= 0 {
		return 0
	}
	eff := b.rate * b.share()
	now := b.now()
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(b.depth(eff), b.tokens+el.Seconds()*eff)
		b.last = now
	}
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / eff * float64(time.Second))
}
