package fanout

import (
	"context"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/webhooksink"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

// countingEvents counts the calls a worker makes into its Events.
type countingEvents struct {
	Events
	enabled, emitted atomic.Int64
}

func (c *countingEvents) Enabled(appID string) bool {
	c.enabled.Add(1)
	return c.Events.Enabled(appID)
}

func (c *countingEvents) Emit(ev webhook.Event) bool {
	c.emitted.Add(1)
	return c.Events.Emit(ev)
}

// startWithEvents is start with one worker that emits webhook events to ev.
func (e *env) startWithEvents(wcfg WorkerConfig, snd Sender, ev Events) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g, ctx := errgroup.WithContext(ctx)
	p, err := NewPlanner(DefaultPlannerConfig(), e.st, e.lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		e.t.Fatal(err)
	}
	g.Go(func() error { return p.Run(ctx) })
	w, err := NewWorker(wcfg, e.st, e.lg, snd, zap.NewNop(), metrics.NewSet())
	if err != nil {
		e.t.Fatal(err)
	}
	w.SetEvents(ev)
	g.Go(func() error { return w.Run(ctx) })
	r := &roles{cancel: cancel, g: g}
	e.t.Cleanup(r.stop)
}

// hookedEvents runs a webhook dispatcher over the env's store, posting to a sink over HTTP.
func (e *env) hookedEvents(secret string) (*countingEvents, *webhooksink.Sink, string) {
	e.t.Helper()
	sink := webhooksink.New(secret)
	srv := httptest.NewServer(sink)
	e.t.Cleanup(srv.Close)
	d := webhook.New(webhook.Config{FlushEvery: 5 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond},
		e.st, zap.NewNop(), metrics.NewSet())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = d.Run(ctx) }()
	e.t.Cleanup(func() { cancel(); wg.Wait() })
	return &countingEvents{Events: d}, sink, srv.URL
}

// TestFanoutWebhookEventsMatchTheRecord: with the app's webhook set, a push whose targets are
// sent, failed (mi) and dead (some APNs tokens) gives the receiver one event per target, per
// channel exactly as the record counts them.
func TestFanoutWebhookEventsMatchTheRecord(t *testing.T) {
	const n = 400
	e := newEnv(t)
	e.createApp(16, nil)
	e.seed(16, n)
	const secret = "fanout-events-secret-01"
	ev, sink, url := e.hookedEvents(secret)
	app, err := e.st.GetApp(context.Background(), testApp)
	if err != nil {
		t.Fatal(err)
	}
	app.Webhook = push.AppWebhook{URL: url, Secret: secret}
	if err := e.st.PutApp(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	snd := newRecSender()
	snd.outcome = func(d *push.Delivery) push.Result {
		switch d.Target.Channel {
		case push.ChannelMi:
			return push.Result{Outcome: push.OutcomeFailed, Reason: "mi: no credentials"}
		case push.ChannelAPNs:
			if d.Target.ObjectID[len(d.Target.ObjectID)-1] == '4' {
				return push.Result{Outcome: push.OutcomeInvalidToken, Reason: "Unregistered"}
			}
		}
		return push.Result{Outcome: push.OutcomeSent}
	}
	e.startWithEvents(DefaultWorkerConfig(), snd, ev)
	job := e.submit(push.Job{})
	rec := e.waitDone(job.NotificationObjectID)
	total := rec.Counts.Total().Targets
	waitfor.True(t, 10*time.Second, "an event per target", func() bool { return int64(sink.Ledger().Events) == total })
	got := map[string]push.Tally{}
	for _, w := range sink.Events() {
		x := got[w.Channel]
		switch w.Type {
		case "sent":
			x.Sent++
		case "failed":
			x.Failed++
		default:
			t.Fatalf("event %+v", w)
		}
		if w.PushID != job.NotificationObjectID || w.AppID != testApp || w.InstallationID == "" {
			t.Fatalf("event %+v", w)
		}
		got[w.Channel] = x
	}
	for ch, c := range rec.Counts {
		if g := got[ch]; g.Sent != c.Sent || g.Failed != c.Failed+c.InvalidTokens {
			t.Errorf("%s: events sent %d failed %d; record sent %d failed %d invalid %d", ch, g.Sent, g.Failed, c.Sent, c.Failed, c.InvalidTokens)
		}
	}
	if l := sink.Ledger(); l.BadSigs != 0 || l.Duplicates != 0 {
		t.Errorf("ledger %+v", l)
	}
}

// TestFanoutWithoutWebhookEmitsNothing: an app without a webhook costs one lookup per task
// run and no event at all.
func TestFanoutWithoutWebhookEmitsNothing(t *testing.T) {
	const n = 400
	e := newEnv(t)
	e.createApp(16, nil)
	e.seed(16, n)
	ev, sink, _ := e.hookedEvents("fanout-events-secret-01")
	e.startWithEvents(DefaultWorkerConfig(), newRecSender(), ev)
	job := e.submit(push.Job{})
	rec := e.waitDone(job.NotificationObjectID)
	if rec.Counts.Total().Sent == 0 {
		t.Fatal("nothing sent")
	}
	if ev.emitted.Load() != 0 || sink.Ledger().Requests != 0 {
		t.Fatalf("%d events emitted for an app without a webhook", ev.emitted.Load())
	}
	if k := ev.enabled.Load(); k == 0 || k > int64(rec.Tasks) {
		t.Fatalf("%d webhook lookups for %d tasks, want one per task run", k, rec.Tasks)
	}
}
