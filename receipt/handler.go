package receipt

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/webhook"
)

// Store is what the handler reads and writes.
type Store interface {
	GetApp(ctx context.Context, appID string) (push.App, error)
	CountReceipts(ctx context.Context, appID, pushID, channel string, deviceIDs []string, now time.Time) (int, error)
	// For the webhook's arrived events: the installation a vendor token belongs to.
	LookupDevice(ctx context.Context, appID string, kind push.IDKind, deviceID string) (objectID string, err error)
	GetInstallation(ctx context.Context, appID, objectID string) (push.Installation, error)
}

// TokenInvalidator deletes the installation of a dead token unless it was refreshed after since
// (the senders' invalidator: docs/decisions.md, "Vendor senders").
type TokenInvalidator interface {
	InvalidateToken(ctx context.Context, appID, objectID, deviceID string, since time.Time) error
}

// Events takes the webhook's delivery events (webhook.Dispatcher).
type Events interface {
	Enabled(appID string) bool
	Emit(ev webhook.Event) bool
}

// Config tunes a Handler.
type Config struct {
	// InvalidGuard stops deleting installations of an app and vendor once its receipts named
	// more than this many dead tokens and more dead tokens than arrivals: the senders' rule
	// (sender.Config.InvalidGuard, default 50; negative: never stop).
	InvalidGuard int
	// GuardIdle forgets an app and vendor's guard counts after this long without a receipt
	// (default 5m, the sender pools' idle timeout: the same window a pool's counts live).
	GuardIdle time.Duration

	now func() time.Time // tests
}

// Handler applies the receipts the API receives.
type Handler struct {
	cfg  Config
	st   Store
	inv  TokenInvalidator
	ev   Events // nil: no webhook events
	log  *zap.Logger
	m    *handlerMetrics
	mu   sync.Mutex
	seen map[guardKey]*guard
}

type guardKey struct{ app, vendor string }

// guard counts one app and vendor's receipts, as a sender pool counts its replies.
type guard struct {
	arrived, dead int64
	last          time.Time
	logged        bool
}

// handlerMetrics are pushd_receipts_total{vendor,what}, created up front for every vendor and
// outcome (small fixed sets).
type handlerMetrics struct {
	by map[string]*metrics.Counter // vendor + "/" + what
}

var outcomes = []string{"arrived", "other", "dead_deleted", "dead_kept", "refused"}

func newHandlerMetrics(set *metrics.Set) *handlerMetrics {
	m := &handlerMetrics{by: map[string]*metrics.Counter{}}
	for _, v := range Vendors {
		for _, w := range outcomes {
			m.by[v+"/"+w] = set.NewCounter(`pushd_receipts_total{vendor="` + v + `",what="` + w + `"}`)
		}
	}
	return m
}

func (m *handlerMetrics) inc(vendor, what string, n int) {
	if c := m.by[vendor+"/"+what]; c != nil && n > 0 {
		c.Add(n)
	}
}

// New returns a Handler. inv may be nil (no token cleanup), ev nil (no webhook events).
func New(cfg Config, st Store, inv TokenInvalidator, ev Events, log *zap.Logger, set *metrics.Set) *Handler {
	if cfg.InvalidGuard == 0 {
		cfg.InvalidGuard = 50
	}
	if cfg.GuardIdle <= 0 {
		cfg.GuardIdle = 5 * time.Minute
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	return &Handler{cfg: cfg, st: st, inv: inv, ev: ev, log: log.Named("receipts"), m: newHandlerMetrics(set), seen: map[guardKey]*guard{}}
}

// Vendors lists the vendors whose receipts are taken in.
var Vendors = []string{push.ChannelMi, push.ChannelHMS, push.ChannelHonor, push.ChannelVivo, push.ChannelOppo, push.ChannelMz}

func known(vendor string) bool {
	for _, v := range Vendors {
		if v == vendor {
			return true
		}
	}
	return false
}

// Receive applies one receipt request of vendor for app appID: token is the URL's last segment
// ("" when none), header reads the request's headers. It refuses (a push.Error) an unknown
// vendor or app (404), an unauthenticated request (401) and a body it cannot read (400), and
// then changes nothing. Entries about pushes that are not pushd's are skipped.
func (h *Handler) Receive(ctx context.Context, vendor, appID, token string, header func(string) string, body []byte) error {
	if !known(vendor) {
		return push.Errorf(push.CodeNotFoundRoute, "no receipts of vendor %q (one of mi, hms, honor, vivo, oppo, mz)", vendor)
	}
	app, err := h.st.GetApp(ctx, appID)
	if errors.Is(err, store.ErrNotFound) {
		h.m.inc(vendor, "refused", 1)
		return push.Errorf(push.CodeObjectNotFound, "no app %q", appID)
	}
	if err != nil {
		return push.Errorf(push.CodeUnavailable, "cannot read the app now, retry later")
	}
	if !authentic(&app, vendor, token, header) {
		h.m.inc(vendor, "refused", 1)
		return push.Errorf(push.CodeUnauthorized, "the %s receipt is not authenticated for app %s", vendor, appID)
	}
	es, err := parse(vendor, body)
	if err != nil {
		h.m.inc(vendor, "refused", 1)
		return push.Errorf(push.CodeValidation, "cannot read the %s receipt: %v", vendor, err)
	}
	return h.apply(ctx, appID, vendor, es)
}

// installationID is the installationId of the installation whose vendor token is token, for
// an arrived event; "" when none is stored (or the store cannot say now: the event goes
// without it rather than the receipt being refused). Two reads per device, paid only by apps
// with a webhook.
func (h *Handler) installationID(ctx context.Context, appID, token string) string {
	oid, err := h.st.LookupDevice(ctx, appID, push.KindRegID, token)
	if err == nil {
		var inst push.Installation
		if inst, err = h.st.GetInstallation(ctx, appID, oid); err == nil {
			return inst.Route.InstallationID
		}
	}
	if !errors.Is(err, store.ErrNotFound) {
		h.log.Warn("cannot find the installation of a receipt's device", zap.String(telemetry.KeyAppID, appID), zap.Error(err))
	}
	return ""
}

// apply counts the arrivals per push record, emits their events, and cleans the dead tokens
// under the guard.
func (h *Handler) apply(ctx context.Context, appID, vendor string, es []Entry) error {
	now := h.cfg.now()
	arrived := map[string][]string{} // push record → devices
	nids := map[string]string{}
	var nArrived, nOther int
	for i := range es {
		e := &es[i]
		switch e.Kind {
		case Arrived:
			arrived[e.PushID] = append(arrived[e.PushID], e.DeviceID)
			nids[e.PushID] = e.NotificationID
			nArrived++
		case Dead:
		default:
			nOther++
		}
	}
	hooks := h.ev != nil && h.ev.Enabled(appID)
	for pid, ids := range arrived {
		if _, err := h.st.CountReceipts(ctx, appID, pid, vendor, ids, now); err != nil {
			h.log.Warn("cannot count receipts", zap.String(telemetry.KeyAppID, appID), zap.String(telemetry.KeyVendor, vendor), zap.Error(err))
			return push.Errorf(push.CodeUnavailable, "cannot count the receipts now, retry later")
		}
		if hooks {
			for _, id := range ids {
				h.ev.Emit(webhook.Event{Type: webhook.Arrived, AppID: appID, PushID: pid, NotificationID: nids[pid], Channel: vendor,
					InstallationID: h.installationID(ctx, appID, id), DeviceID: id, At: now})
			}
		}
	}
	h.m.inc(vendor, "arrived", nArrived)
	h.m.inc(vendor, "other", nOther)
	h.mu.Lock()
	h.guardOf(appID, vendor, now).arrived += int64(nArrived)
	h.mu.Unlock()
	for i := range es {
		e := &es[i]
		if e.Kind != Dead {
			continue
		}
		if h.inv == nil || !h.deadAllowed(appID, vendor, now) {
			h.m.inc(vendor, "dead_kept", 1)
			continue
		}
		since := e.At
		if since.IsZero() {
			since = now
		}
		if err := h.inv.InvalidateToken(ctx, appID, "", e.DeviceID, since); err != nil {
			h.log.Warn("cannot delete an installation a receipt names dead", zap.String(telemetry.KeyAppID, appID), zap.String(telemetry.KeyVendor, vendor), zap.Error(err))
			return push.Errorf(push.CodeUnavailable, "cannot apply the receipt now, retry later")
		}
		h.m.inc(vendor, "dead_deleted", 1)
	}
	return nil
}

// guardOf is the guard of an app and vendor, new after GuardIdle without a receipt. The caller
// holds h.mu.
func (h *Handler) guardOf(appID, vendor string, now time.Time) *guard {
	k := guardKey{appID, vendor}
	g := h.seen[k]
	if g == nil || now.Sub(g.last) > h.cfg.GuardIdle {
		if len(h.seen) >= maxGuards { // bounded: forget the idle ones
			for k2, g2 := range h.seen {
				if now.Sub(g2.last) > h.cfg.GuardIdle {
					delete(h.seen, k2)
				}
			}
		}
		g = &guard{}
		h.seen[k] = g
	}
	g.last = now
	return g
}

// maxGuards bounds the apps and vendors whose guard counts are kept at once.
const maxGuards = 100_000

// deadAllowed counts one dead token of a receipt and says whether it may be deleted: the
// senders' rule (sender/pool.go) on the receipts of one app and vendor: no longer once the dead
// tokens are more than InvalidGuard and more than the arrivals (gateways.md §0: "invalid" for
// every token of an app is a configuration error, not a mass uninstall).
func (h *Handler) deadAllowed(appID, vendor string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.guardOf(appID, vendor, now)
	g.dead++
	if h.cfg.InvalidGuard > 0 && g.dead > int64(h.cfg.InvalidGuard) && g.dead > g.arrived {
		if !g.logged {
			g.logged = true
			h.log.Error("receipts name most tokens of the app dead: installations are no longer deleted; check the app's vendor credentials and package",
				zap.String(telemetry.KeyAppID, appID), zap.String(telemetry.KeyVendor, vendor), zap.Int64("dead", g.dead), zap.Int64("arrived", g.arrived))
		}
		return false
	}
	return true
}
