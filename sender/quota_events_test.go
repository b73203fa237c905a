package sender

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/webhooksink"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

type hookApps struct{ url string }

func (h hookApps) GetApp(_ context.Context, id string) (push.App, error) {
	return push.App{ID: id, Webhook: push.AppWebhook{URL: h.url, Secret: "quota-events-secret-0123"}}, nil
}

// TestSenderQuotaDeferredEvents: a delivery held back by a vendor's spent daily quota is
// reported to the app's webhook as deferred, with the vendor's reason, once per quota answer
// (the Mi simulator's day quota of 25, 60 targets, one request at a time), and then sent.
func TestSenderQuotaDeferredEvents(t *testing.T) {
	sink := webhooksink.New("quota-events-secret-0123")
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	hooks := webhook.New(webhook.Config{FlushEvery: 5 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond},
		hookApps{srv.URL}, zap.NewNop(), metrics.NewSet())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = hooks.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	e, v := newMiQuota(t, 25)
	e.d.SetEvents(hooks)
	const n = 60
	ds := make([]push.Delivery, n)
	for i := range ds {
		ds[i] = v.delivery(i, time.Time{})
		ds[i].NotificationObjectID = "push1"
	}
	for i, r := range send(t, e.d, ds) {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	quotaAnswers := int(v.stats().ByReason[v.reason])
	if quotaAnswers == 0 {
		t.Fatal("the simulator gave no quota answer")
	}
	waitfor.True(t, 10*time.Second, "the deferred events", func() bool { return sink.Ledger().ByType["deferred"] == quotaAnswers })
	for _, ev := range sink.Events() {
		if ev.Type != "deferred" || !strings.Contains(ev.Reason, v.reason) || ev.Channel != push.ChannelMi || ev.PushID != "push1" || ev.InstallationID == "" {
			t.Fatalf("event %+v", ev)
		}
	}
	if l := sink.Ledger(); l.Events != quotaAnswers || l.BadSigs != 0 {
		t.Fatalf("ledger %+v, want %d deferred events", l, quotaAnswers)
	}
}
