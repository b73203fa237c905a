package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/push"
)

// onlineBelow is a Presence: installation ids hid-<i> with i < n are online.
type onlineBelow int

func (n onlineBelow) Online(_ context.Context, app string, iids []string, online []bool) error {
	for k, iid := range iids {
		i, err := strconv.Atoi(strings.TrimPrefix(iid, "hid-"))
		online[k] = app == testApp && err == nil && i < int(n)
	}
	return nil
}

// startWithPresence runs a planner and one worker that asks p (e.start without presence).
func (e *env) startWithPresence(snd Sender, p Presence) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g, ctx := errgroup.WithContext(ctx)
	pl, err := NewPlanner(DefaultPlannerConfig(), e.st, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := NewWorker(DefaultWorkerConfig(), e.st, e.lg, snd, zap.NewNop(), metrics.NewSet())
	if err != nil {
		e.t.Fatal(err)
	}
	w.SetPresence(p)
	g.Go(func() error { return pl.Run(ctx) })
	g.Go(func() error { return w.Run(ctx) })
	e.t.Cleanup(func() {
		cancel()
		if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
			e.t.Error(err)
		}
	})
}

// TestChannelPolicyRouting: the hybrid (HMS, Honor) targets of a push go where its channel
// policy says — vendor: their vendor; own_only: the own channel by installation id; own_first:
// the own channel for those online now, the vendor for the others; vendor_first: the vendor,
// each with its own-channel fallback — and each is counted once, on the channel that carried
// it (a vendor_first target the sender reports carried by the own channel counts there). The
// app's setting applies when the push names none; a dry run counts own_only on the own channel.
func TestChannelPolicyRouting(t *testing.T) {
	const buckets = 16
	e := newEnv(t)
	e.createApp(buckets, func(s *push.AppSettings) { s.ChannelPolicy = push.PolicyOwnFirst })
	e.seedHybrid(buckets, 30) // hid-i: fcm when i%3 == 0, HMS when 1, Honor when 2
	snd := newRecSender()
	snd.keep = true
	snd.outcome = func(d *push.Delivery) push.Result {
		if d.Fallback != nil && d.Target.Channel == push.ChannelHMS { // as direct.Handoff after a refusal
			return push.Result{Outcome: push.OutcomeQueued, Channel: push.ChannelDirect}
		}
		return push.Result{Outcome: push.OutcomeSent}
	}
	e.startWithPresence(snd, onlineBelow(10))
	where := json.RawMessage(`{"vendor":{"$in":["HMS","honor"]}}`)
	type want struct{ direct, hms, honor int64 }
	cases := []struct {
		policy string // "" ⇒ the app's own_first
		want   want
	}{
		{push.PolicyVendor, want{0, 10, 10}},
		{push.PolicyOwnOnly, want{20, 0, 0}},
		{"", want{6, 7, 7}}, // online: hid-1, 2, 4, 5, 7, 8
		{push.PolicyVendorFirst, want{10, 0, 10}},
	}
	for _, c := range cases {
		t.Run("policy="+c.policy, func(t *testing.T) {
			snd.mu.Lock()
			snd.ds = nil
			snd.mu.Unlock()
			job := e.submit(push.Job{Kind: push.JobQuery, Where: where, ChannelPolicy: c.policy})
			rec := e.waitDone(job.NotificationObjectID)
			got := want{rec.Counts[push.ChannelDirect].Targets, rec.Counts[push.ChannelHMS].Targets, rec.Counts[push.ChannelHonor].Targets}
			if got != c.want {
				t.Errorf("targets direct/hms/honor %+v, want %+v", got, c.want)
			}
			snd.mu.Lock()
			ds := snd.ds
			snd.mu.Unlock()
			if len(ds) != 20 {
				t.Fatalf("sender got %d deliveries, want 20", len(ds))
			}
			for _, d := range ds {
				i, _ := strconv.Atoi(strings.TrimPrefix(d.Target.ObjectID, "h"))
				iid := "hid-" + strconv.Itoa(i)
				own := c.policy == push.PolicyOwnOnly || (c.policy == "" && i < 10)
				switch {
				case own && (d.Target.Channel != push.ChannelDirect || d.Target.DeviceID != iid || d.Message == nil || d.Message.Channel != push.ChannelDirect):
					t.Errorf("%s: %+v, want the own channel to %s", d.Target.ObjectID, d.Target, iid)
				case !own && (d.Target.Channel == push.ChannelDirect || d.Target.DeviceID != "hreg-"+strconv.Itoa(i)):
					t.Errorf("%s: %+v, want its vendor", d.Target.ObjectID, d.Target)
				case c.policy == push.PolicyVendorFirst && (d.Fallback == nil || d.Fallback.Channel != push.ChannelDirect || d.Target.InstallationID != iid):
					t.Errorf("%s under vendor_first: fallback %v, installation %q", d.Target.ObjectID, d.Fallback, d.Target.InstallationID)
				case c.policy != push.PolicyVendorFirst && d.Fallback != nil:
					t.Errorf("%s: a fallback under %q", d.Target.ObjectID, c.policy)
				}
			}
		})
	}
	aud, err := NewAudience(DefaultPlannerConfig(), e.st)
	if err != nil {
		t.Fatal(err)
	}
	dry := push.Job{ID: "dry", AppID: testApp, Kind: push.JobQuery, Where: where, ChannelPolicy: push.PolicyOwnOnly, CreatedAt: time.Now()}
	got, err := aud.Count(context.Background(), &dry)
	if err != nil {
		t.Fatal(err)
	}
	if got.Channels[push.ChannelDirect].Targets != 20 {
		t.Errorf("dry run of own_only counts %v, want 20 on the own channel", targetsOf(got.Channels))
	}
}
