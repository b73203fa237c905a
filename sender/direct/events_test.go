package direct_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/loadtest/webhooksink"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/webhook"
)

// TestDirectWebhookEvents: with the app's webhook set, the gateway reports a message cached
// for a connected device as sent and its ack as arrived, a message that expired before it was
// cached as expired, and nothing for a second copy of a record; each matches the record.
func TestDirectWebhookEvents(t *testing.T) {
	const secret = "direct-events-secret-01"
	r := newRig(t, direct.Config{})
	sink := webhooksink.New(secret)
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	app, err := r.st.GetApp(context.Background(), testApp)
	if err != nil {
		t.Fatal(err)
	}
	app.Webhook = push.AppWebhook{URL: srv.URL, Secret: secret}
	if err := r.st.PutApp(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	hooks := webhook.New(webhook.Config{FlushEvery: 5 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond},
		r.st, zap.NewNop(), metrics.NewSet())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = hooks.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	r.core.SetEvents(hooks)

	r.installation(t, "dev1", push.DeviceAndroid, "")
	r.record(t, "m1")
	r.record(t, "m2")
	d, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
	r.consume(t, "dev1", "m1", time.Time{})
	r.consume(t, "dev1", "m2", time.Now().Add(-time.Second))
	waitfor.True(t, 10*time.Second, "the arrival counted", func() bool { return r.tally(t, "m1").Arrivals == 1 })
	r.consume(t, "dev1", "m1", time.Time{}) // a second copy: nothing new
	waitfor.True(t, 10*time.Second, "three events", func() bool { return sink.Ledger().Events == 3 })
	if d.Ledger().Times("m1") != 1 {
		t.Fatalf("m1 received %d times", d.Ledger().Times("m1"))
	}
	l := sink.Ledger()
	if got := l.Devices[webhook.TokenHash("dev1")]; got["sent"] != 1 || got["arrived"] != 1 || got["expired"] != 1 || l.Duplicates != 0 {
		t.Fatalf("ledger %+v", l)
	}
	if m1, m2 := r.tally(t, "m1"), r.tally(t, "m2"); l.ByPush["m1"]["sent"] != int(m1.Sent) || l.ByPush["m1"]["arrived"] != int(m1.Arrivals) || l.ByPush["m2"]["expired"] != int(m2.Expired) {
		t.Fatalf("events by push %v; record m1 %+v, m2 %+v", l.ByPush, m1, m2)
	}
	for _, ev := range sink.Events() {
		if ev.Channel != push.ChannelDirect || ev.InstallationID != "dev1" || ev.AppID != testApp {
			t.Fatalf("event %+v", ev)
		}
		if ev.Type != "arrived" && ev.NotificationID != "nid"+ev.PushID {
			t.Fatalf("event %+v: want notification id nid%s", ev, ev.PushID)
		}
	}
}
