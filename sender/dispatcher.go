package sender

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/sender/fcm"
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/honor"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/vivo"
	"github.com/pushd/pushd/store"
)

// ErrClosed is returned by Send once the dispatcher is closed.
var ErrClosed = errors.New("sender closed")

// AppSource gives the app (and its gateway credentials) of a delivery.
type AppSource interface {
	GetApp(ctx context.Context, appID string) (push.App, error)
}

// TokenInvalidator deletes the installation whose token a gateway reported dead. objectID is
// "" for a listed device id without a stored installation; since is when the gateway learned
// the token was dead (zero when it does not say): an installation refreshed after that keeps
// its token.
//
// DropVendorToken is the same report for a vendor_first delivery (one with an own-channel
// Fallback): the installation stays, reachable on the own channel, and loses only its dead
// vendor token (registrationId), under the same rules (a rotated token or a refresh after since
// keeps it).
type TokenInvalidator interface {
	InvalidateToken(ctx context.Context, appID, objectID, deviceID string, since time.Time) error
	DropVendorToken(ctx context.Context, appID, objectID, regID string, since time.Time) error
}

// Dispatcher routes deliveries to pools. See the package doc.
type Dispatcher struct {
	cfg     Config
	src     AppSource
	inv     TokenInvalidator
	log     *zap.Logger
	m       map[string]*channelMetrics
	drivers map[string]driver
	closed  chan struct{}
	life    context.Context // cancelled by Close
	kill    context.CancelFunc

	appsMu sync.Mutex
	apps   map[string]*appEntry

	quota *quotas // vendor daily quotas spent, per pool key

	mu       sync.Mutex // guards pools, isClosed; see pool.pending
	pools    map[poolKey]*pool
	isClosed bool
}

// appEntry is a cached app and its parsed credentials per channel.
type appEntry struct {
	fetched time.Time
	found   bool
	rates   push.ChannelRates // the app's SenderRates
	creds   map[string]*credsEntry
}

type credsEntry struct {
	fingerprint string
	creds       credentials
	err         error // invalid credentials: every delivery of the channel fails with it
}

// New builds a dispatcher. Run (or Close) ends it.
func New(cfg Config, apps AppSource, inv TokenInvalidator, log *zap.Logger, set *metrics.Set) *Dispatcher {
	cfg = cfg.WithDefaults()
	drivers := cfg.drivers
	if drivers == nil {
		// Each registered gateway is complete (auth, batching, reply table, simulator); a
		// channel without a driver fails its targets "channel <x> not available".
		drivers = map[string]driver{
			push.ChannelAPNs: newDriver(cfg.APNs, apns.Load),
			push.ChannelFCM:  newDriver(cfg.FCM, fcm.Load),
			push.ChannelHMS:  newDriver(cfg.HMS, hms.Load),
			push.ChannelMi:   newDriver(cfg.Mi, mi.Load),
			push.ChannelVivo: newDriver(cfg.Vivo, vivo.Load),
			push.ChannelOppo: newDriver(cfg.Oppo, oppo.Load),
			push.ChannelMz:   newDriver(cfg.Mz, mz.Load),
			// Honor Push (sender/honor).
			push.ChannelHonor: newDriver(cfg.Honor, honor.Load),
		}
	}
	life, kill := context.WithCancel(context.Background())
	return &Dispatcher{
		life:    life,
		kill:    kill,
		cfg:     cfg,
		src:     apps,
		inv:     inv,
		log:     log.Named("sender"),
		m:       newMetrics(set),
		drivers: drivers,
		closed:  make(chan struct{}),
		apps:    make(map[string]*appEntry),
		pools:   make(map[poolKey]*pool),
		quota:   newQuotas(),
	}
}

// Run closes idle pools until ctx ends, then closes the dispatcher.
func (d *Dispatcher) Run(ctx context.Context) error {
	tick := time.NewTicker(max(d.cfg.IdleTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			d.Close()
			return nil
		case <-d.closed:
			return nil
		case <-tick.C:
			d.closeIdle()
		}
	}
}

// closeIdle closes the pools with nothing pending and unused for IdleTimeout.
func (d *Dispatcher) closeIdle() {
	limit := d.cfg.now().Add(-d.cfg.IdleTimeout).UnixNano()
	var idle []*pool
	d.mu.Lock()
	for k, p := range d.pools {
		if p.pending.Load() == 0 && p.lastUsed.Load() <= limit {
			delete(d.pools, k)
			idle = append(idle, p)
		}
	}
	d.mu.Unlock()
	for _, p := range idle {
		p.close()
		p.log.Debug("idle pool closed")
	}
}

// Pools is the number of open pools.
func (d *Dispatcher) Pools() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pools)
}

// Close stops every pool, aborting requests in flight; Send calls still waiting return ErrClosed.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	if d.isClosed {
		d.mu.Unlock()
		return
	}
	d.isClosed = true
	close(d.closed)
	d.kill()
	pools := d.pools
	d.pools = map[poolKey]*pool{}
	d.mu.Unlock()
	for _, p := range pools {
		p.close()
	}
}

// batch collects the results of one Send call. Once abandoned (Send returned early) results
// are no longer written: the caller owns res again.
type batch struct {
	mu        sync.Mutex
	res       []push.Result
	left      int
	abandoned bool
	unsettled bool // a delivery ended without a final result (its Send call's context ended)
	done      chan struct{}
}

// finish records the result of delivery i; final is false when the delivery was cut short
// (canceled, or the dispatcher closed) and r is no outcome to count.
func (b *batch) finish(i int, r push.Result, final bool) {
	b.mu.Lock()
	if !b.abandoned {
		b.res[i] = r
	}
	if !final {
		b.unsettled = true
	}
	b.left--
	if b.left == 0 {
		close(b.done)
	}
	b.mu.Unlock()
}

func (b *batch) abandon() {
	b.mu.Lock()
	b.abandoned = true
	b.mu.Unlock()
}

// Send delivers ds and blocks until res[i] holds the final result of ds[i] (retries done
// inside). A non-nil error means ctx ended, an app could not be read, or the dispatcher closed
// before all were final; the caller must then not count or commit the batch.
func (d *Dispatcher) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	if len(res) < len(ds) {
		panic("BUG: sender.Send needs a result per delivery")
	}
	if len(ds) == 0 {
		return nil
	}
	select {
	case <-d.closed:
		return ErrClosed
	default:
	}
	// One merge per batch, not per delivery: Close aborts this batch's requests and backoffs.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(d.life, cancel)
	defer stop()
	b := &batch{res: res, left: len(ds), done: make(chan struct{})}
	var memo appMemo
	now := d.cfg.now()
	sr := sendRunsPool.Get().(*sendRuns)
	defer func() {
		sr.reset()
		sendRunsPool.Put(sr)
	}()
	for i := range ds {
		dl := &ds[i]
		r, p, err := d.route(ctx, dl, now, &memo)
		if err != nil {
			d.cutRuns(sr, b)
			b.abandon()
			return err
		}
		if p == nil {
			b.finish(i, r, true)
			continue
		}
		if p.batchable(dl) {
			sr.add(p, dl, i)
			continue
		}
		select {
		case p.queue <- item{ctx: ctx, d: dl, i: i, b: b}:
			p.ensureWorker()
		case <-ctx.Done():
			p.done()
			d.cutRuns(sr, b)
			b.abandon()
			return ctx.Err()
		case <-d.closed:
			p.done()
			d.cutRuns(sr, b)
			b.abandon()
			return ErrClosed
		}
	}
	// The runs of batching pools (one per pool, usually one per call): every run but the
	// first in a goroutine of its own, the first in this one. They end before Send returns
	// (each honours ctx), so sr is not reused under them.
	var wg sync.WaitGroup
	for k := 1; k < len(sr.runs); k++ {
		wg.Add(1)
		go func(r *poolRun) {
			defer wg.Done()
			d.sendBatch(ctx, r, b)
		}(&sr.runs[k])
	}
	if len(sr.runs) > 0 {
		d.sendBatch(ctx, &sr.runs[0], b)
	}
	wg.Wait()
	select {
	case <-b.done:
		return d.settled(ctx, b)
	default:
	}
	select {
	case <-b.done:
		// The workers finish the deliveries of a canceled call too, so b.done can be ready
		// together with ctx.Done: only a batch of final results is a success.
		return d.settled(ctx, b)
	case <-ctx.Done():
		b.abandon()
		return ctx.Err()
	case <-d.closed:
		b.abandon()
		return ErrClosed
	}
}

// settled is Send's answer once every delivery of b finished: nil when all results are
// final, otherwise the reason some were cut short (the caller must not count them).
func (d *Dispatcher) settled(ctx context.Context, b *batch) error {
	b.mu.Lock()
	unsettled := b.unsettled
	b.mu.Unlock()
	if !unsettled {
		return nil
	}
	select {
	case <-d.closed:
		return ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.Canceled
}

// appMemo remembers the last app of a Send call: batches are usually of one app.
type appMemo struct {
	id string
	e  *appEntry
}

// route settles dl at once (r, nil) or picks its pool, counting it pending there (_, p).
// An error is not dl's: the batch cannot proceed (the app could not be read).
func (d *Dispatcher) route(ctx context.Context, dl *push.Delivery, now time.Time, memo *appMemo) (push.Result, *pool, error) {
	ch := dl.Target.Channel
	m := d.m[ch]
	if m == nil {
		return push.Result{Outcome: push.OutcomeFailed, Reason: fmt.Sprintf("unknown channel %q", ch)}, nil, nil
	}
	fail := func(reason string) (push.Result, *pool, error) {
		m.rejections.Inc()
		m.outcome(push.OutcomeFailed)
		return push.Result{Outcome: push.OutcomeFailed, Reason: reason}, nil, nil
	}
	drv := d.drivers[ch]
	if drv == nil {
		return fail("channel " + ch + " not available")
	}
	if exp := dl.Message.Expiration; !exp.IsZero() && !now.Before(exp) {
		if reason, held, err := d.heldReason(ctx, dl, now, memo); err != nil {
			return push.Result{}, nil, err
		} else if held {
			m.outcome(push.OutcomeFailed)
			return push.Result{Outcome: push.OutcomeFailed, Reason: reason}, nil, nil
		}
		m.outcome(push.OutcomeExpired)
		return push.Result{Outcome: push.OutcomeExpired}, nil, nil
	}
	if memo.e == nil || memo.id != dl.AppID {
		e, err := d.app(ctx, dl.AppID, now)
		if err != nil {
			return push.Result{}, nil, err
		}
		memo.id, memo.e = dl.AppID, e
	}
	if !memo.e.found {
		return fail("app not found")
	}
	ce := memo.e.creds[ch]
	switch {
	case ce == nil:
		return fail("no " + ch + " credentials configured")
	case ce.err != nil:
		return fail("invalid " + ch + " credentials: " + ce.err.Error())
	}
	route, err := ce.creds.Route(dl)
	if err != nil {
		return fail(err.Error())
	}
	key := poolKey{channel: ch, appID: dl.AppID, fingerprint: ce.fingerprint, route: route}
	p, err := d.acquire(key, ce.creds, d.cfg.rate(dl.AppID, ch, memo.e.rates))
	if err != nil {
		return push.Result{}, nil, err
	}
	if p == nil {
		return fail("cannot build " + ch + " client")
	}
	if r, ok := p.rejected(); ok {
		p.pending.Add(-1)
		p.m.queued.Dec()
		m.outcome(r.Outcome)
		return r, nil, nil
	}
	return push.Result{}, p, nil
}

// HeldReason says why dl, of a push that expired before dl could be sent, was held back: when
// its app+vendor is parked on a spent daily quota, the quota's reason (and true). Its push
// record then counts it failed with that reason, as the deliveries the quota held in their
// pool are, and not expired: the quota, not a slow fan-out, is why it was never sent.
// Fan-out asks it for the deliveries of an expired push it does not hand to Send.
func (d *Dispatcher) HeldReason(ctx context.Context, dl *push.Delivery) (string, bool) {
	reason, held, err := d.heldReason(ctx, dl, d.cfg.now(), &appMemo{})
	return reason, held && err == nil
}

func (d *Dispatcher) heldReason(ctx context.Context, dl *push.Delivery, now time.Time, memo *appMemo) (string, bool, error) {
	if !d.quota.has(dl.Target.Channel) {
		return "", false, nil
	}
	if memo.e == nil || memo.id != dl.AppID {
		e, err := d.app(ctx, dl.AppID, now)
		if err != nil {
			return "", false, err
		}
		memo.id, memo.e = dl.AppID, e
	}
	ce := memo.e.creds[dl.Target.Channel]
	if !memo.e.found || ce == nil || ce.err != nil {
		return "", false, nil
	}
	route, err := ce.creds.Route(dl)
	if err != nil {
		return "", false, nil
	}
	qp, ok := d.quota.parked(poolKey{channel: dl.Target.Channel, appID: dl.AppID, fingerprint: ce.fingerprint, route: route}, now)
	if !ok {
		return "", false, nil
	}
	return qp.reason + quotaExpiredSuffix, true, nil
}

// acquire returns the pool of key (creating it, or giving it rate when that changed),
// counted pending for one delivery.
func (d *Dispatcher) acquire(key poolKey, c credentials, rate float64) (*pool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.isClosed {
		return nil, ErrClosed
	}
	p := d.pools[key]
	if p == nil {
		cl, err := c.newClient(key.route)
		if err != nil {
			d.log.Warn("cannot build gateway client", zap.String("app_id", key.appID), zap.String("vendor", key.channel), zap.Error(err))
			return nil, nil
		}
		p = newPool(key, cl, &d.cfg, rate, d.inv, d.m[key.channel], d.log, d.quota)
		d.pools[key] = p
		p.log.Debug("pool created")
	} else if p.rate != rate {
		p.rate = rate // under d.mu
		p.bucket.setRate(rate)
	}
	p.pending.Add(1)
	p.m.queued.Inc()
	return p, nil
}

// app returns the cached app entry, reading the app again after AppCacheTTL. Parsed
// credentials are kept while their bytes are unchanged (they hold shared JWTs and tokens).
func (d *Dispatcher) app(ctx context.Context, appID string, now time.Time) (*appEntry, error) {
	d.appsMu.Lock()
	old := d.apps[appID]
	d.appsMu.Unlock()
	if old != nil && now.Sub(old.fetched) < d.cfg.AppCacheTTL {
		return old, nil
	}
	app, err := d.src.GetApp(ctx, appID)
	e := &appEntry{fetched: now, found: true, creds: map[string]*credsEntry{}, rates: vendorRates(app.Settings.SenderRates, &app.Settings.VendorQuotas)}
	switch {
	case errors.Is(err, store.ErrNotFound):
		e.found = false
	case err != nil:
		return nil, fmt.Errorf("cannot read app %s: %w", appID, err)
	}
	for ch, raw := range app.Credentials {
		drv := d.drivers[ch]
		if drv == nil {
			continue
		}
		sum := sha256.Sum256(raw)
		fp := hex.EncodeToString(sum[:8])
		if old != nil {
			if oc := old.creds[ch]; oc != nil && oc.fingerprint == fp {
				e.creds[ch] = oc
				continue
			}
		}
		c, err := drv.load(raw)
		e.creds[ch] = &credsEntry{fingerprint: fp, creds: c, err: err}
	}
	d.appsMu.Lock()
	d.apps[appID] = e
	d.appsMu.Unlock()
	return e, nil
}
