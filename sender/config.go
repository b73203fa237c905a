package sender

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/push"

	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/sender/fcm"
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/honor"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/vivo"
)

// Config configures the dispatcher and its pools.
type Config struct {
	// Workers is the most deliveries in flight per pool, each worker one request (default 1000).
	Workers int
	// QueueSize bounds the deliveries waiting for a worker per pool (default Workers);
	// a full queue blocks Send.
	QueueSize int
	// Rate is the default per-pool rate in deliveries/s (0: unlimited); Rates overrides it by
	// "<channel>" or "<appId>/<channel>" (the more specific wins). DefaultRates fill the
	// channels Rates does not name.
	Rate  float64
	Rates map[string]float64
	// Burst is the token-bucket depth (default a tenth of the node's share of the rate, at
	// least 1).
	Burst int
	// Share is this node's part of every rate, which is cluster-wide (nil: 1, a single
	// node): Membership.Share, from the sending nodes registered in the store.
	Share func() float64
	// MemberTTL is how long a sending node counts as live in the store after its last
	// heartbeat (Membership; default DefaultMemberTTL).
	MemberTTL time.Duration
	// RetryHorizon is how long a delivery is retried after its first attempt while the gateway
	// answers "retry" (5xx, 429, timeouts, lost connections) (default 10m): long enough to ride
	// out a gateway outage of minutes. A delivery whose expiration comes first is retried until
	// then and counted expired. A pool whose gateway has answered nothing but "retry" for
	// longer than this fails new deliveries at once (still probing the gateway), so a long
	// outage ends its pushes instead of holding the fan-out for hours.
	RetryHorizon time.Duration
	// DownAfter is how many consecutive "retry" replies mark a pool's gateway down (default
	// 10): its deliveries then park, and one probe request at a time (spaced by the backoff)
	// finds out when it answers again.
	DownAfter int
	// BaseBackoff and MaxBackoff shape the exponential backoff of retries and probes
	// (defaults 200ms, 30s).
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// IdleTimeout closes a pool unused for this long (default 5m). A pool stopped by the
	// breaker is not "used" by the deliveries it fails fast, so it is rebuilt (and tries the
	// credentials again) IdleTimeout after it stopped, or at once when the credentials change.
	IdleTimeout time.Duration
	// InvalidGuard stops deleting installations once a pool got this many dead-token replies
	// and no success (default 50; negative: never stop): an app whose every token is "dead"
	// usually has the wrong environment or credentials. Later dead-token replies of that pool
	// fail the delivery with the reason and keep the installation.
	InvalidGuard int
	// AppCacheTTL is how long an app and its parsed credentials are reused (default 10s).
	AppCacheTTL time.Duration

	APNs apns.Config
	FCM  fcm.Config
	HMS  hms.Config
	Mi   mi.Config
	Vivo vivo.Config
	Oppo oppo.Config
	Mz   mz.Config

	Honor honor.Config

	// Test hooks.
	sleep   func(ctx context.Context, d time.Duration) error // backoff and rate waits
	now     func() time.Time
	drivers map[string]driver // replaces the built-in gateways
}

// DefaultRetryHorizon is RetryHorizon's default: gateway outages of a few minutes are common
// (deploys, regional failovers) and cost no delivery; beyond it a push's remaining targets fail
// rather than wait.
const DefaultRetryHorizon = 10 * time.Minute

// DefaultRates are the per-pool rates (deliveries/s) of the vendors that cap each app's
// messages per second (gateways.md §8a), at the low end of their published ranges: vivo
// 3,000–5,000, OPPO 5,000–30,000 by cumulative users, Xiaomi 500–3,000, Meizu 200, Honor
// 3,000. A pool is one app's profile, i.e. one vendor app. Beyond them the vendors answer flow
// control (retried); an app with a higher allowance raises its own with
// Rates["<appId>/<channel>"]. HMS is not paced: its limit is "at least 6,000, scaled by monthly
// actives", and it answers traffic control with 503 and Retry-After, which the pool honours.
var DefaultRates = map[string]float64{push.ChannelVivo: 3000, push.ChannelOppo: 5000, push.ChannelMi: 500, push.ChannelMz: 200, push.ChannelHonor: 3000}

// DefaultMaxBackoff is MaxBackoff's default.
const DefaultMaxBackoff = 30 * time.Second

// RegisterFlags registers the settings operators tune under prefix (e.g. "sender-").
func (c *Config) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.DurationVar(&c.RetryHorizon, prefix+"retry-horizon", DefaultRetryHorizon,
		"how long a delivery is retried while its gateway answers 5xx/429 or cannot be reached (its expiration ends it earlier)")
	fs.DurationVar(&c.MaxBackoff, prefix+"max-backoff", DefaultMaxBackoff,
		"longest wait between two retries of a delivery, and between two probes of a gateway that is down")
	fs.DurationVar(&c.MemberTTL, prefix+"member-ttl", DefaultMemberTTL,
		"how long a sending node counts as live after its last heartbeat in the store; each live node takes an equal share of every configured rate")
	fs.Func(prefix+"rates", "comma list of cluster-wide rates in deliveries/s per app and channel, <channel>=<n> or <appId>/<channel>=<n> (0: unlimited; an app's settings.senderRates wins); defaults "+
		FormatRates(DefaultRates), func(v string) error {
		r, err := ParseRates(v)
		if err != nil {
			return err
		}
		c.Rates = r
		return nil
	})
}

// ParseRates reads "<key>=<n>,..." (key "<channel>" or "<appId>/<channel>").
func ParseRates(v string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		k, n, ok := strings.Cut(f, "=")
		r, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if !ok || strings.TrimSpace(k) == "" || err != nil || r < 0 {
			return nil, fmt.Errorf("rate %q: want <channel>=<deliveries/s> or <appId>/<channel>=<deliveries/s>, not negative", f)
		}
		out[strings.TrimSpace(k)] = r
	}
	return out, nil
}

// FormatRates writes rates as ParseRates reads them, keys sorted.
func FormatRates(rates map[string]float64) string {
	keys := make([]string, 0, len(rates))
	for k := range rates {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatFloat(rates[k], 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 1000
	}
	if c.QueueSize == 0 {
		c.QueueSize = c.Workers
	}
	rates := maps.Clone(c.Rates)
	for ch, r := range DefaultRates {
		if _, set := rates[ch]; !set {
			if rates == nil {
				rates = map[string]float64{}
			}
			rates[ch] = r
		}
	}
	c.Rates = rates
	if c.RetryHorizon == 0 {
		c.RetryHorizon = DefaultRetryHorizon
	}
	if c.DownAfter == 0 {
		c.DownAfter = 10
	}
	if c.BaseBackoff == 0 {
		c.BaseBackoff = 200 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	if c.InvalidGuard == 0 {
		c.InvalidGuard = 50
	}
	if c.AppCacheTTL == 0 {
		c.AppCacheTTL = 10 * time.Second
	}
	if c.sleep == nil {
		c.sleep = sleep
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.Workers < 0 || c.QueueSize < 0 || c.Burst < 0 || c.DownAfter < 0 {
		return errors.New("sender: Workers, QueueSize, Burst and DownAfter must not be negative")
	}
	if c.Rate < 0 {
		return errors.New("sender: Rate must not be negative")
	}
	for k, r := range c.Rates {
		if r < 0 {
			return fmt.Errorf("sender: rate of %q must not be negative", k)
		}
	}
	if c.MemberTTL < 0 {
		return errors.New("sender: MemberTTL must not be negative")
	}
	if c.RetryHorizon < 0 || c.BaseBackoff < 0 || c.MaxBackoff < 0 || c.IdleTimeout < 0 || c.AppCacheTTL < 0 {
		return errors.New("sender: durations must not be negative")
	}
	if err := c.APNs.Validate(); err != nil {
		return err
	}
	if err := c.FCM.Validate(); err != nil {
		return err
	}
	if err := c.HMS.Validate(); err != nil {
		return err
	}
	if err := c.Honor.Validate(); err != nil {
		return err
	}
	if err := c.Vivo.Validate(); err != nil {
		return err
	}
	if err := c.Oppo.Validate(); err != nil {
		return err
	}
	if err := c.Mi.Validate(); err != nil {
		return err
	}
	return c.Mz.Validate()
}

// rate is the cluster-wide rate of (app, channel): the app's own SenderRates, else Rates
// by "<appId>/<channel>", then "<channel>", else Rate.
func (c *Config) rate(appID, channel string, appRates ...push.ChannelRates) float64 {
	for _, m := range appRates {
		if r := m.Of(channel); r > 0 {
			return r
		}
	}
	if r, ok := c.Rates[appID+"/"+channel]; ok {
		return r
	}
	if r, ok := c.Rates[channel]; ok {
		return r
	}
	return c.Rate
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
