package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
)

// Apps reads an app's webhook settings (store.Store implements it).
type Apps interface {
	GetApp(ctx context.Context, appID string) (push.App, error)
}

// inbox is the channel between Emit and the dispatch loop; the loop moves events on at once,
// so its size only absorbs bursts. Buffer bounds what is held in all.
const inbox = 4096

// Dispatcher batches, signs and posts delivery events. Emit may be called from any goroutine;
// Run is the service. A nil *Dispatcher is valid and disabled.
type Dispatcher struct {
	cfg    Config
	apps   Apps
	client *http.Client
	log    *zap.Logger
	now    func() time.Time

	in    chan Event
	held  atomic.Int64 // events emitted and not yet taken by their receiver (or dropped)
	hooks sync.Map     // app id → *hookEntry

	// afterPost, when set (tests), is called after each request with its error.
	afterPost func(appID string, n int, err error)

	m struct {
		emitted, dropped, delivered, discarded, attempts, failures *metrics.Counter
	}
	lastDropLog atomic.Int64 // unix seconds of the last overflow log line
}

type hookEntry struct {
	hook  push.AppWebhook
	until time.Time
}

// New builds a dispatcher. cfg is completed with its defaults.
func New(cfg Config, apps Apps, log *zap.Logger, set *metrics.Set) *Dispatcher {
	cfg = cfg.WithDefaults()
	d := &Dispatcher{
		cfg:    cfg,
		apps:   apps,
		client: &http.Client{Timeout: cfg.Timeout},
		log:    log.Named("webhook"),
		now:    time.Now,
		in:     make(chan Event, min(inbox, cfg.Buffer)),
	}
	d.m.emitted = set.NewCounter(`pushd_webhook_events_total{result="emitted"}`)
	d.m.dropped = set.NewCounter(`pushd_webhook_events_dropped_total`)
	d.m.delivered = set.NewCounter(`pushd_webhook_events_total{result="delivered"}`)
	d.m.discarded = set.NewCounter(`pushd_webhook_events_total{result="discarded"}`)
	d.m.attempts = set.NewCounter(`pushd_webhook_requests_total{result="ok"}`)
	d.m.failures = set.NewCounter(`pushd_webhook_requests_total{result="failed"}`)
	set.NewGauge(`pushd_webhook_events_held`, func() float64 { return float64(d.held.Load()) })
	return d
}

// Enabled says whether appID has a webhook. The settings are read at most once per HookTTL
// per app; in between it is a map lookup. A nil dispatcher is never enabled.
func (d *Dispatcher) Enabled(appID string) bool {
	if d == nil {
		return false
	}
	return d.hook(appID).URL != ""
}

func (d *Dispatcher) hook(appID string) push.AppWebhook {
	now := d.now()
	if v, ok := d.hooks.Load(appID); ok {
		if e := v.(*hookEntry); now.Before(e.until) {
			return e.hook
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Timeout)
	app, err := d.apps.GetApp(ctx, appID)
	cancel()
	if err != nil {
		// Keep what was known (nothing: no webhook) and try again after the TTL.
		d.log.Warn("cannot read the webhook of an app", zap.String(telemetry.KeyAppID, appID), zap.Error(err))
		if v, ok := d.hooks.Load(appID); ok {
			app.Webhook = v.(*hookEntry).hook
		}
	}
	d.hooks.Store(appID, &hookEntry{hook: app.Webhook, until: now.Add(d.cfg.HookTTL)})
	return app.Webhook
}

// Forget makes the next Enabled of appID read its settings again (the admin API changed them
// on this node).
func (d *Dispatcher) Forget(appID string) {
	if d != nil {
		d.hooks.Delete(appID)
	}
}

// Emit hands ev to the dispatcher without blocking. It reports false when the buffer is full:
// the event is dropped, counted and logged (at most once a second), and delivery goes on.
func (d *Dispatcher) Emit(ev Event) bool {
	if d == nil {
		return false
	}
	if d.held.Add(1) > int64(d.cfg.Buffer) {
		d.held.Add(-1)
		d.drop(1)
		return false
	}
	select {
	case d.in <- ev:
		d.m.emitted.Inc()
		return true
	default:
		d.held.Add(-1)
		d.drop(1)
		return false
	}
}

func (d *Dispatcher) drop(n int) {
	d.m.dropped.Add(n)
	now := d.now().Unix()
	if last := d.lastDropLog.Load(); now > last && d.lastDropLog.CompareAndSwap(last, now) {
		d.log.Warn("webhook buffer full: delivery events dropped", zap.Int("buffer", d.cfg.Buffer), zap.Uint64("droppedTotal", d.m.dropped.Get()))
	}
}

// Dropped is how many events did not fit the buffer since the start.
func (d *Dispatcher) Dropped() uint64 { return d.m.dropped.Get() }

// Held is how many events are in memory, emitted and not yet taken by their receiver.
func (d *Dispatcher) Held() int { return int(d.held.Load()) }

// appQueue is one app's events in the dispatch loop. Only the loop touches it.
type appQueue struct {
	evs      []Event
	first    time.Time // when the oldest of evs arrived
	batch    []Event   // the batch being posted or waiting for its retry
	inflight bool
	attempt  int
	retryAt  time.Time
}

type posted struct {
	app string
	err error
}

// Run dispatches until ctx ends. Events still held then are lost (in memory only).
func (d *Dispatcher) Run(ctx context.Context) error {
	queues := map[string]*appQueue{}
	done := make(chan posted)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(max(d.cfg.FlushEvery/4, time.Millisecond))
	defer tick.Stop()
	start := func(app string, q *appQueue, now time.Time) {
		if q.inflight {
			return
		}
		if q.batch == nil {
			n := min(len(q.evs), d.cfg.BatchSize)
			if n == 0 || n < d.cfg.BatchSize && now.Sub(q.first) < d.cfg.FlushEvery {
				return
			}
			q.batch = append([]Event(nil), q.evs[:n]...)
			q.evs = append(q.evs[:0], q.evs[n:]...)
			q.first = now
		} else if now.Before(q.retryAt) {
			return
		}
		q.inflight = true
		batch := q.batch
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := d.post(ctx, app, batch)
			select {
			case done <- posted{app, err}:
			case <-ctx.Done():
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-d.in:
			q := queues[ev.AppID]
			if q == nil {
				q = &appQueue{}
				queues[ev.AppID] = q
			}
			now := d.now()
			if len(q.evs) == 0 {
				q.first = now
			}
			q.evs = append(q.evs, ev)
			start(ev.AppID, q, now)
		case p := <-done:
			q := queues[p.app]
			q.inflight = false
			now := d.now()
			if p.err == nil {
				d.held.Add(-int64(len(q.batch)))
				q.batch, q.attempt = nil, 0
			} else {
				q.attempt++
				q.retryAt = now.Add(d.backoff(q.attempt))
			}
			start(p.app, q, now)
		case <-tick.C:
			now := d.now()
			for app, q := range queues {
				start(app, q, now)
				if !q.inflight && q.batch == nil && len(q.evs) == 0 {
					delete(queues, app)
				}
			}
		}
	}
}

func (d *Dispatcher) backoff(attempt int) time.Duration {
	b := d.cfg.RetryMin
	for i := 1; i < attempt && b < d.cfg.RetryMax; i++ {
		b *= 2
	}
	return min(b, d.cfg.RetryMax)
}

// post sends one batch to app's webhook. An app whose webhook was removed meanwhile takes
// nothing: its events are discarded (counted), not retried.
func (d *Dispatcher) post(ctx context.Context, app string, batch []Event) (err error) {
	defer func() {
		if d.afterPost != nil {
			d.afterPost(app, len(batch), err)
		}
	}()
	hook := d.hook(app)
	if hook.URL == "" {
		d.m.discarded.Add(len(batch))
		return nil
	}
	body := Batch{AppID: app, Events: make([]Wire, len(batch))}
	for i := range batch {
		body.Events[i] = batch[i].ToWire()
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("cannot encode %d webhook events of app %s: %w", len(batch), app, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("cannot build the webhook request of app %s: %w", app, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pushd-webhook/1")
	req.Header.Set(SignatureHeader, Sign(hook.Secret, d.now(), b))
	res, err := d.client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		if res.StatusCode/100 != 2 {
			err = errors.New(res.Status)
		}
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // the URL may hold a secret of the receiver's: not for the log
	}
	if err != nil {
		d.m.failures.Inc()
		d.log.Info("webhook request failed; retrying with backoff", zap.String(telemetry.KeyAppID, app), zap.Int("events", len(batch)), zap.Error(err))
		return fmt.Errorf("cannot post %d webhook events of app %s: %w", len(batch), app, err)
	}
	d.m.attempts.Inc()
	d.m.delivered.Add(len(batch))
	return nil
}
