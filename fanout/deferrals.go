package fanout

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/webhook"
)

// DeferralStore is what the deferral re-driver uses (store.Store).
type DeferralStore interface {
	Quotas
	DueDeferred(ctx context.Context, before time.Time, limit int) ([]push.Deferred, error)
	DeleteDeferred(ctx context.Context, ds []push.Deferred) error
	GetApp(ctx context.Context, appID string) (push.App, error)
	Records
}

// Lease says whether this node holds the cluster lease under which deferred targets are sent
// (internal/lease.Keeper): one node re-drives them, not every fan-out node.
type Lease interface {
	Held() (store.Lease, bool)
}

// DeferralsConfig tunes the re-driver.
type DeferralsConfig struct {
	// Every is how often due deferred targets are looked for: how late after its quota
	// window resets a deferred target goes out at most. Default 10s.
	Every time.Duration
	// Batch is how many due targets one look takes; default 500.
	Batch int

	clock Clock // test hook: nil ⇒ wall clock
}

// DefaultDeferralsConfig returns the defaults.
func DefaultDeferralsConfig() DeferralsConfig {
	return DeferralsConfig{Every: 10 * time.Second, Batch: 500}
}

// RegisterFlags registers the fields under prefix (e.g. "fanout-").
func (c *DeferralsConfig) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.DurationVar(&c.Every, prefix+"deferred-every", c.Every, "how often the targets a spent vendor quota deferred are looked for once their quota window reset: how late they go out at most")
	fs.IntVar(&c.Batch, prefix+"deferred-batch", c.Batch, "deferred targets one look sends")
}

// Validate checks the values.
func (c DeferralsConfig) Validate() error {
	if c.Every <= 0 || c.Batch < 1 {
		return errors.New("fanout deferrals: interval must be positive and batch at least 1")
	}
	return nil
}

// Deferrals sends the targets a spent vendor quota deferred (quota.go) once their window has
// ended: each still unexpired goes to its vendor within the new window's budget (or, under
// own_first, to the own channel when the device is connected now; under vendor_first, to the
// own channel when the vendor refuses it), an expired one is counted expired, one that does
// not fit the new budget waits for the next window. Its push record moves each ended target
// from deferred to sent, failed or expired, so targets = sent + failed + expired + deferred
// + pending holds throughout. A target is re-driven once its push's fan-out is done (its
// deferred count is then on the record).
//
// Order: send, count on the record, then delete the rows (a new window's rows written first).
// A crash after the send repeats it (at least once); a crash after the count finds, on the
// repeat, the record's deferred count already taken and counts nothing again.
type Deferrals struct {
	cfg      DeferralsConfig
	st       DeferralStore
	snd      Sender
	lease    Lease // nil: always
	presence Presence
	events   Events
	log      *zap.Logger
	clock    Clock

	m struct {
		sent, failed, expired, own, again *metrics.Counter
	}
}

// NewDeferrals returns a re-driver sending through snd, looking only while lease is held
// (nil: always).
func NewDeferrals(cfg DeferralsConfig, st DeferralStore, snd Sender, lease Lease, log *zap.Logger, set *metrics.Set) (*Deferrals, error) {
	def := DefaultDeferralsConfig()
	if cfg.Every == 0 {
		cfg.Every = def.Every
	}
	if cfg.Batch == 0 {
		cfg.Batch = def.Batch
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Deferrals{cfg: cfg, st: st, snd: snd, lease: lease, log: log.Named("deferrals"), clock: cfg.clock}
	if d.clock == nil {
		d.clock = wallClock{}
	}
	d.m.sent = set.NewCounter(`pushd_fanout_deferred_ended_total{outcome="sent"}`)
	d.m.failed = set.NewCounter(`pushd_fanout_deferred_ended_total{outcome="failed"}`)
	d.m.expired = set.NewCounter(`pushd_fanout_deferred_ended_total{outcome="expired"}`)
	d.m.own = set.NewCounter(`pushd_fanout_deferred_ended_total{outcome="own_channel"}`)
	d.m.again = set.NewCounter(`pushd_fanout_deferred_again_total`)
	return d, nil
}

// SetPresence lets own_first deferred targets whose device is connected go to the own channel.
func (d *Deferrals) SetPresence(p Presence) { d.presence = p }

// SetEvents reports each deferred target's end to its app's webhook.
func (d *Deferrals) SetEvents(ev Events) { d.events = ev }

// Run looks for due deferred targets every cfg.Every until ctx ends.
func (d *Deferrals) Run(ctx context.Context) error {
	for {
		if _, held := d.held(); held {
			if _, err := d.Tick(ctx); err != nil && ctx.Err() == nil {
				d.log.Warn("cannot re-drive deferred targets; the next look retries", zap.Error(err))
			}
		}
		if err := d.clock.Sleep(ctx, d.cfg.Every); err != nil {
			return nil
		}
	}
}

func (d *Deferrals) held() (store.Lease, bool) {
	if d.lease == nil {
		return store.Lease{}, true
	}
	return d.lease.Held()
}

// Tick re-drives the due deferred targets (up to cfg.Batch) and says how many ended.
func (d *Deferrals) Tick(ctx context.Context) (int, error) {
	now := d.clock.Now()
	rows, err := d.st.DueDeferred(ctx, now, d.cfg.Batch)
	if err != nil {
		return 0, err
	}
	// By push, in the order listed.
	var order []string
	byPush := map[string][]push.Deferred{}
	for _, r := range rows {
		k := r.AppID + "\x00" + r.PushID
		if _, ok := byPush[k]; !ok {
			order = append(order, k)
		}
		byPush[k] = append(byPush[k], r)
	}
	apps := map[string]*push.App{}
	ended := 0
	for _, k := range order {
		n, err := d.redrive(ctx, byPush[k], apps, now)
		if err != nil {
			return ended, err
		}
		ended += n
	}
	return ended, nil
}

// ending is one deferred target's end: the counts it moves and its webhook event.
type ending struct {
	row     *push.Deferred
	res     push.Result
	channel string // the channel that carried it when not its vendor (own channel)
}

// redrive ends the due rows of one push.
func (d *Deferrals) redrive(ctx context.Context, rows []push.Deferred, apps map[string]*push.App, now time.Time) (int, error) {
	appID, pushID := rows[0].AppID, rows[0].PushID
	rec, err := d.st.GetNotification(ctx, appID, pushID)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && rec.Status == push.StatusCancelled:
		return 0, d.st.DeleteDeferred(ctx, rows) // deleted or cancelled: nothing to send or count
	case err != nil:
		return 0, fmt.Errorf("cannot read record %s of deferred targets: %w", pushID, err)
	case rec.Status != push.StatusDone:
		return 0, nil // its fan-out still runs: its deferred counts are not on the record yet
	}
	app := apps[appID]
	if app == nil {
		a, err := d.st.GetApp(ctx, appID)
		if errors.Is(err, store.ErrNotFound) {
			return 0, d.st.DeleteDeferred(ctx, rows)
		}
		if err != nil {
			return 0, fmt.Errorf("cannot read app %s of deferred targets: %w", appID, err)
		}
		app = &a
		apps[appID] = app
	}
	var (
		ends  []ending
		again []push.Deferred
		ds    []push.Delivery
		idx   []int // ds[j] is rows[idx[j]]
		done  = make([]bool, len(rows))
	)
	// The new window's budget, per vendor and class.
	type key struct{ vendor, class string }
	want := map[key]int64{}
	buds := map[key]*budget{}
	online := d.onlineRows(ctx, appID, rows)
	for i := range rows {
		r := &rows[i]
		if exp := r.Expires(); !exp.IsZero() && !now.Before(exp) {
			ends = append(ends, ending{row: r, res: push.Result{Outcome: push.OutcomeExpired}})
			done[i] = true
			continue
		}
		if online[i] {
			ds = append(ds, ownDelivery(deliveryOf(r), r.Own))
			idx = append(idx, i)
			done[i] = true
			continue
		}
		k := key{r.Vendor, r.Class}
		if _, ok := buds[k]; !ok {
			bu, err := budgetOf(app, r.Vendor, r.Class, now)
			if err != nil {
				return 0, err
			}
			buds[k] = bu
		}
		want[k]++
	}
	left := map[key]int64{}
	for k, n := range want {
		bu := buds[k]
		if bu == nil || bu.limit <= 0 {
			left[k] = n
			continue
		}
		g, err := d.st.ReserveVendorQuota(ctx, appID, bu.name, bu.day, n, bu.limit, bu.end)
		if err != nil {
			return 0, fmt.Errorf("cannot count the %s quota of app %s: %w", bu.name, appID, err)
		}
		left[k] = g
	}
	for i := range rows {
		r := &rows[i]
		if done[i] {
			continue
		}
		k := key{r.Vendor, r.Class}
		if left[k] <= 0 {
			again = append(again, d.moved(r, buds[k], now))
			continue
		}
		left[k]--
		dl := deliveryOf(r)
		if r.Policy == push.PolicyVendorFirst && r.Own != nil && r.Target.InstallationID != "" {
			dl.Fallback = r.Own
		}
		ds = append(ds, dl)
		idx = append(idx, i)
	}
	if len(ds) > 0 {
		res := make([]push.Result, len(ds))
		if err := d.snd.Send(ctx, ds, res); err != nil {
			return 0, fmt.Errorf("cannot send %d deferred targets of push %s: %w", len(ds), pushID, err)
		}
		for j, i := range idx {
			r := &rows[i]
			switch {
			case res[j].Outcome == push.OutcomeDeferred: // the vendor's quota is spent again
				bu := buds[key{r.Vendor, r.Class}]
				if bu != nil && bu.limit > 0 {
					if err := d.st.SpendVendorQuota(ctx, appID, bu.name, bu.day, bu.end); err != nil {
						return 0, err
					}
				}
				again = append(again, d.moved(r, bu, now))
			case ds[j].Target.Channel == push.ChannelDirect:
				ends = append(ends, ending{row: r, res: res[j], channel: push.ChannelDirect})
			default:
				ends = append(ends, ending{row: r, res: res[j], channel: res[j].Channel})
			}
		}
	}
	if err := d.count(ctx, appID, pushID, ends); err != nil {
		return 0, err
	}
	if len(again) > 0 {
		if err := d.st.PutDeferred(ctx, again); err != nil {
			return 0, err
		}
		d.m.again.Add(len(again))
	}
	if err := d.st.DeleteDeferred(ctx, rows); err != nil {
		return 0, err
	}
	d.report(ends, now)
	return len(ends), nil
}

// moved is r waiting for the window after now (bu's, or the next China day without one).
func (d *Deferrals) moved(r *push.Deferred, bu *budget, now time.Time) push.Deferred {
	n := *r
	if bu != nil {
		n.Until = bu.end
	} else {
		_, n.Until = push.QuotaWindow(now, push.ChinaTime)
	}
	if !n.Until.After(r.Until) { // never the same row: the old one is deleted after
		n.Until = r.Until.Add(24 * time.Hour)
	}
	return n
}

// deliveryOf is the vendor delivery of r.
func deliveryOf(r *push.Deferred) push.Delivery {
	return push.Delivery{AppID: r.AppID, NotificationObjectID: r.PushID, NotificationID: r.NotificationID,
		Prod: r.Prod, Message: r.Message, Target: r.Target}
}

// count moves each ended target from deferred to its outcome on the push record, in one
// update. A target whose vendor's deferred count is already 0 (its end counted before a
// crash, or its task repeated and sent it) is not counted again.
func (d *Deferrals) count(ctx context.Context, appID, pushID string, ends []ending) error {
	if len(ends) == 0 {
		return nil
	}
	_, err := d.st.UpdateNotification(ctx, appID, pushID, func(n *push.Notification) error {
		if n.Counts == nil {
			n.Counts = push.Counts{}
		}
		for i := range ends {
			e := &ends[i]
			v := n.Counts[e.row.Vendor]
			if v.Deferred <= 0 {
				continue
			}
			v.Deferred--
			var o push.Tally
			carrier := e.row.Vendor
			if e.channel != "" && e.channel != e.row.Vendor {
				// Carried by the own channel: the target is counted there (its gateway counts
				// it sent or expired), as fan-out counts a target where it went.
				v.Targets--
				carrier = e.channel
				o.Targets = 1
			}
			switch e.res.Outcome {
			case push.OutcomeSent:
				o.Sent = 1
			case push.OutcomeExpired:
				o.Expired = 1
			case push.OutcomeInvalidToken:
				o.InvalidTokens = 1
			case push.OutcomeQueued:
			default:
				o.Fail(FailureClass(e.res.Reason))
				reason := e.res.Reason
				if reason == "" {
					reason = "failed without a reason"
				}
				n.Errors = appendReason(n.Errors, reason, 20)
			}
			n.Counts[e.row.Vendor] = v
			c := n.Counts[carrier]
			c.Add(o)
			n.Counts[carrier] = c
		}
		n.UpdatedAt = time.Now()
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot count %d deferred targets on record %s: %w", len(ends), pushID, err)
	}
	return nil
}

// report counts the ends and sends their webhook events (the own channel's are its gateway's).
func (d *Deferrals) report(ends []ending, now time.Time) {
	for i := range ends {
		e := &ends[i]
		var typ webhook.Type
		reason := ""
		switch e.res.Outcome {
		case push.OutcomeSent:
			d.m.sent.Inc()
			typ = webhook.Sent
		case push.OutcomeExpired:
			d.m.expired.Inc()
			typ = webhook.Expired
		case push.OutcomeQueued:
			d.m.own.Inc()
			continue
		default:
			d.m.failed.Inc()
			typ, reason = webhook.Failed, e.res.Reason
		}
		if d.events != nil && d.events.Enabled(e.row.AppID) {
			d.events.Emit(deferredEvent(e.row, typ, reason, now))
		}
	}
	if len(ends) > 0 {
		d.log.Debug("deferred targets ended", zap.String(telemetry.KeyAppID, ends[0].row.AppID), zap.Int("targets", len(ends)))
	}
}

// onlineRows says, asking the presence once, which of rows are own_first targets connected to
// the own channel now. When the presence cannot answer, none is (they stay with their vendor).
func (d *Deferrals) onlineRows(ctx context.Context, appID string, rows []push.Deferred) []bool {
	online := make([]bool, len(rows))
	if d.presence == nil {
		return online
	}
	var iids []string
	var at []int
	for i := range rows {
		r := &rows[i]
		if r.Policy == push.PolicyOwnFirst && r.Own != nil && r.Target.InstallationID != "" {
			iids = append(iids, r.Target.InstallationID)
			at = append(at, i)
		}
	}
	if len(iids) == 0 {
		return online
	}
	got := make([]bool, len(iids))
	if err := d.presence.Online(ctx, appID, iids, got); err != nil {
		d.log.Warn("cannot ask the own channel's presence: deferred own_first targets stay with their vendor",
			zap.String(telemetry.KeyAppID, appID), zap.Int("targets", len(iids)), zap.Error(err))
		return online
	}
	for k, i := range at {
		online[i] = got[k]
	}
	return online
}
