package pushapi

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/wire"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
)

// Counter counts the targets a push would reach now, per delivery channel, with the fan-out's
// own planner, scan, filter and routing (fanout.Audience; cmd/pushd injects it, as the API
// tier does not import fanout). An error that is a *push.Error is the client's.
type Counter interface {
	Count(ctx context.Context, job *push.Job) (push.Audience, error)
}

// DryRunConfig bounds the dry runs of one API process. A dry run reads every installation a
// real push would read (a push to every device scans the whole app), so its cost is bounded
// twice: by time, and by how many run at once.
type DryRunConfig struct {
	// Timeout ends a dry run that has not counted its audience by then (code 124, HTTP 504):
	// below the server's 30 s read timeout, and above the few seconds a million
	// installations take to scan (DESIGN.md: 1.7–2.0M rows/s per scanner, 350k/s when the
	// where needs the JSON document).
	Timeout time.Duration
	// Concurrency is how many dry runs one process counts at once; one more waits up to
	// dryRunWait for a place, then gets 503 with Retry-After. Each uses one core while it
	// scans, so the default leaves the cores of a small node to real pushes.
	Concurrency int
}

// DefaultDryRunConfig returns the defaults.
func DefaultDryRunConfig() DryRunConfig {
	return DryRunConfig{Timeout: 20 * time.Second, Concurrency: 2}
}

// Validate checks the values.
func (c DryRunConfig) Validate() error {
	switch {
	case c.Timeout < time.Second || c.Timeout > 10*time.Minute:
		return errors.New("dry run: timeout must be in [1s, 10m]")
	case c.Concurrency < 1 || c.Concurrency > 64:
		return errors.New("dry run: concurrency must be in [1, 64]")
	}
	return nil
}

// RegisterFlags registers the fields under prefix (e.g. "dry-run-").
func (c *DryRunConfig) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.DurationVar(&c.Timeout, prefix+"timeout", c.Timeout, "longest a dry run of a push may take to count its audience; over it the call answers code 124 (HTTP 504)")
	fs.IntVar(&c.Concurrency, prefix+"concurrency", c.Concurrency, "dry runs of pushes one API process counts at once; more wait up to a second, then get 503")
}

// dryRunWait is how long a dry run waits for a place before it is refused: long enough to
// ride out a short dry run ahead of it, short enough not to hold a connection.
const dryRunWait = time.Second

// dryRun answers a push that asks for validation only (the pushd extension dry_run): it has
// passed every check a real push passes (permission, calls per minute, daily volume, the
// body, the where, hybrid profiles), and now gets its audience per delivery channel and its
// payload per channel, and nothing is written: no record, no job, no req_id claim, no
// daily volume. Its audience is counted at the call's time, also for a push_time ahead.
func (s *Service) dryRun(rctx *fasthttp.RequestCtx, c *api.Call, job *push.Job, pushTime *time.Time) error {
	if s.counter == nil {
		return push.Errorf(push.CodeUnavailable, "dry runs are not available on this node")
	}
	t := time.NewTimer(dryRunWait)
	select {
	case s.dryRuns <- struct{}{}:
		t.Stop()
	case <-t.C:
		rctx.Response.Header.Set("Retry-After", "1")
		return push.Errorf(push.CodeUnavailable, "%d dry runs are already counting on this node: retry", cap(s.dryRuns))
	}
	defer func() { <-s.dryRuns }()
	s.dryRunsTotal.Inc()

	// Not a child of rctx: a RequestCtx is no context for other goroutines to watch (fasthttp
	// writes its done channel at shutdown unsynchronised). The timeout bounds a stop's wait too,
	// as listTimeout does for installation queries.
	ctx, cancel := context.WithTimeout(context.Background(), s.dryCfg.Timeout)
	defer cancel()
	start := time.Now()
	aud, err := s.counter.Count(ctx, job)
	var perr *push.Error
	switch {
	case errors.As(err, &perr):
		return perr
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.dryRunsTimedOut.Inc()
		return push.Errorf(push.CodeTimeout, "the dry run did not count its audience within %s: narrow the where (a channel or deviceType reads less), or raise --dry-run-timeout", s.dryCfg.Timeout)
	case err != nil:
		return fmt.Errorf("cannot count the audience of a dry run of app %s: %w", job.AppID, err)
	}
	body, err := json.Marshal(dryRunJSON(job, c.App, &aud, pushTime, time.Since(start), c.Now))
	if err != nil {
		return fmt.Errorf("BUG: cannot encode a dry run answer: %w", err)
	}
	api.WriteJSON(rctx, fasthttp.StatusOK, body)
	return nil
}

// dryRunAnswer is the answer to a dry run.
type dryRunAnswer struct {
	DryRun bool `json:"dryRun"` // always true: no push was made
	// Devices is how many targets the push would reach, as its record's "devices" would say.
	Devices int64 `json:"devices"`
	// ByChannel and ByDeviceType split Devices by delivery channel (every channel of the
	// app's edition, zeros included, and any other a target routes to) and by device type.
	ByChannel    map[string]int64 `json:"byChannel"`
	ByDeviceType map[string]int64 `json:"byDeviceType"`
	// InvalidTokens are listed device ids the gateway has said are dead: counted in Devices
	// (and in the record's invalidTokens), never sent to.
	InvalidTokens int64 `json:"invalidTokens"`
	// RowsScanned is how many installations were read to count them: what the push's
	// fan-out would read.
	RowsScanned int64 `json:"rowsScanned"`
	// Payloads is the push rendered for each channel of ByChannel: what its gateway would
	// get, or why every target of that channel would fail.
	Payloads  map[string]dryRunPayload `json:"payloads"`
	PushTime  string                   `json:"pushTime,omitempty"` // a scheduled push: when it would be sent
	CountedAt string                   `json:"countedAt"`
	Millis    int64                    `json:"tookMs"`
}

// dryRunPayload is one channel's rendering: the gateway's payload (the APNs JSON, the FCM
// message without its token, the vendors' neutral body, the own channel's frame data) and the
// request attributes that travel beside it; or the reason its targets would fail.
type dryRunPayload struct {
	Payload             json.RawMessage `json:"payload,omitempty"`
	Error               string          `json:"error,omitempty"`
	Silent              bool            `json:"silent,omitempty"`
	Priority            int             `json:"priority,omitempty"`
	PushType            string          `json:"pushType,omitempty"`
	CollapseID          string          `json:"collapseId,omitempty"`
	Expiration          string          `json:"expiration,omitempty"`
	Topic               string          `json:"topic,omitempty"`
	TeamID              string          `json:"teamId,omitempty"`
	NotificationChannel string          `json:"notificationChannel,omitempty"`
	// BadgeIncrement: the APNs payload's badge is each target's own badge plus one.
	BadgeIncrement bool `json:"badgeIncrement,omitempty"`
	// NoCredentials: the app has no credentials for this gateway, so its targets would fail
	// (the own channel needs none).
	NoCredentials bool `json:"noCredentials,omitempty"`
}

func dryRunJSON(job *push.Job, app *push.App, aud *push.Audience, pushTime *time.Time, took time.Duration, now time.Time) *dryRunAnswer {
	out := &dryRunAnswer{
		DryRun:       true,
		ByChannel:    map[string]int64{},
		ByDeviceType: map[string]int64{push.DeviceIOS: 0, push.DeviceAndroid: 0},
		RowsScanned:  aud.Rows,
		Payloads:     map[string]dryRunPayload{},
		CountedAt:    push.FormatTime(now),
		Millis:       took.Milliseconds(),
	}
	if pushTime != nil {
		out.PushTime = push.FormatTime(*pushTime)
	}
	channels := wire.DeliveryChannels(app.Settings.Edition)
	for ch, t := range aud.Channels {
		if !slices.Contains(channels, ch) {
			channels = append(channels, ch)
		}
		out.Devices += t.Targets
		out.InvalidTokens += t.InvalidTokens
		dt := push.DeviceAndroid
		if ch == push.ChannelAPNs {
			dt = push.DeviceIOS
		}
		out.ByDeviceType[dt] += t.Targets
	}
	// Rendered as the fan-out renders (render.Cache), at the call's time.
	opts := render.OptionsFor(job)
	opts.Now = now
	opts.MessageClass = push.MessageClassOf(job, app)
	for _, ch := range channels {
		out.ByChannel[ch] = aud.Channels[ch].Targets
		var (
			m      *push.Message
			badged *render.Badged
			err    error
		)
		if ed := app.Settings.Edition; !ed.HasChannel(ch) {
			_, hasCred := app.Credentials[ch]
			out.Payloads[ch] = dryRunPayload{Error: ed.NotInEdition(ch), NoCredentials: !hasCred} // as fan-out fails them
			continue
		}
		if ch == push.ChannelAPNs {
			m, badged, err = render.RenderBadged(job.Data, opts)
		} else {
			m, err = render.Render(job.Data, ch, opts)
		}
		_, hasCred := app.Credentials[ch]
		noCred := ch != push.ChannelDirect && !hasCred
		if err != nil {
			out.Payloads[ch] = dryRunPayload{Error: err.Error(), NoCredentials: noCred}
			continue
		}
		p := dryRunPayload{
			NoCredentials: noCred,
			Silent:        m.Silent, Priority: m.Priority, PushType: m.PushType, CollapseID: m.CollapseID,
			Topic: m.Topic, TeamID: m.TeamID, NotificationChannel: m.AndroidChannel,
		}
		if json.Valid(m.Body) {
			p.Payload = m.Body
		} else {
			p.Payload, _ = json.Marshal(string(m.Body))
		}
		if !m.Expiration.IsZero() {
			p.Expiration = push.FormatTime(m.Expiration)
		}
		p.BadgeIncrement = badged != nil
		out.Payloads[ch] = p
	}
	return out
}
