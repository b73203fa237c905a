package webhook_test

import (
	"context"
	"fmt"
	"net/http/httptest"
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

type apps map[string]push.App

func (a apps) GetApp(_ context.Context, id string) (push.App, error) { return a[id], nil }

// start runs a dispatcher for app "a1" whose webhook is a sink over real HTTP.
func start(t *testing.T, cfg webhook.Config, secret string) (*webhook.Dispatcher, *webhooksink.Sink) {
	t.Helper()
	sink := webhooksink.New("s3cret-s3cret-s3cret")
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	d := webhook.New(cfg, apps{"a1": {ID: "a1", Webhook: push.AppWebhook{URL: srv.URL + "/hook", Secret: secret}}}, zap.NewNop(), metrics.NewSet())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return d, sink
}

func fast() webhook.Config {
	return webhook.Config{FlushEvery: 5 * time.Millisecond, RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond}
}

func event(i int, typ webhook.Type) webhook.Event {
	return webhook.Event{Type: typ, AppID: "a1", PushID: "p1", NotificationID: "n1", Channel: push.ChannelAPNs,
		InstallationID: fmt.Sprintf("i%d", i), DeviceID: fmt.Sprintf("token-%d", i), At: time.Now()}
}

func TestDispatcherBatchesSignedEvents(t *testing.T) {
	d, sink := start(t, fast(), "s3cret-s3cret-s3cret")
	if !d.Enabled("a1") || d.Enabled("other") {
		t.Fatal("Enabled: want a1 only")
	}
	for i := range 250 {
		if !d.Emit(event(i, webhook.Sent)) {
			t.Fatalf("event %d dropped", i)
		}
	}
	waitfor.True(t, 10*time.Second, "250 events at the sink", func() bool { return sink.Ledger().Events == 250 })
	l := sink.Ledger()
	if l.BadSigs != 0 || l.Duplicates != 0 || l.ByType["sent"] != 250 || len(l.Devices) != 250 {
		t.Fatalf("ledger %+v", l)
	}
	if l.Requests < 3 { // at most 100 events per request
		t.Fatalf("%d requests for 250 events, want at least 3", l.Requests)
	}
}

func TestDispatcherRetriesUntilTheReceiverTakesThem(t *testing.T) {
	d, sink := start(t, fast(), "s3cret-s3cret-s3cret")
	sink.FailNext(5)
	for i := range 120 {
		d.Emit(event(i, webhook.Failed))
	}
	waitfor.True(t, 10*time.Second, "120 events at the sink", func() bool { return sink.Ledger().Events == 120 })
	if l := sink.Ledger(); l.Refused != 5 || l.ByType["failed"] != 120 {
		t.Fatalf("ledger %+v", l)
	}
}

func TestDispatcherWrongSecretIsRefusedAndRetried(t *testing.T) {
	d, sink := start(t, fast(), "not-the-sinks-secret")
	d.Emit(event(1, webhook.Sent))
	waitfor.True(t, 10*time.Second, "refused signatures", func() bool { return sink.Ledger().BadSigs >= 2 })
	if l := sink.Ledger(); l.Events != 0 {
		t.Fatalf("events accepted with a wrong signature: %+v", l)
	}
}

func TestDispatcherOverflowDropsAndCounts(t *testing.T) {
	cfg := fast()
	cfg.Buffer = 10
	d, sink := start(t, cfg, "s3cret-s3cret-s3cret")
	release := sink.Hold()
	accepted := 0
	for i := range 100 {
		if d.Emit(event(i, webhook.Sent)) {
			accepted++
		}
	}
	if accepted != 10 || d.Dropped() != 90 {
		t.Fatalf("accepted %d, dropped %d; want 10 and 90", accepted, d.Dropped())
	}
	release()
	waitfor.True(t, 10*time.Second, "10 events at the sink", func() bool { return sink.Ledger().Events == 10 })
	// Once taken, the buffer has room again.
	waitfor.True(t, 10*time.Second, "an empty buffer", func() bool { return d.Held() == 0 })
	if !d.Emit(event(200, webhook.Sent)) {
		t.Fatal("emit after the buffer drained was dropped")
	}
	waitfor.True(t, 10*time.Second, "11 events at the sink", func() bool { return sink.Ledger().Events == 11 })
}

func TestEventIDsAreStable(t *testing.T) {
	d, sink := start(t, fast(), "s3cret-s3cret-s3cret")
	a, b := event(1, webhook.Arrived), event(1, webhook.Arrived)
	b.At = a.At.Add(time.Minute)
	if a.ID() != b.ID() {
		t.Fatal("the same delivery event has two ids")
	}
	if c := event(1, webhook.Sent); c.ID() == a.ID() {
		t.Fatal("sent and arrived share an id")
	}
	d.Emit(a)
	waitfor.True(t, 10*time.Second, "1 event", func() bool { return sink.Ledger().Events == 1 })
	d.Emit(b)
	waitfor.True(t, 10*time.Second, "the repeat", func() bool { return sink.Ledger().Duplicates == 1 })
	if l := sink.Ledger(); l.Events != 1 {
		t.Fatalf("ledger %+v", l)
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"appId":"a1","events":[]}`)
	now := time.Unix(1_700_000_000, 0)
	h := webhook.Sign("k", now, body)
	if err := webhook.Verify("k", h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		secret, header string
		body           []byte
		at             time.Time
	}{
		"tampered body":  {"k", h, []byte(`{"appId":"a2","events":[]}`), now},
		"wrong secret":   {"x", h, body, now},
		"too old":        {"k", h, body, now.Add(time.Hour)},
		"no signature":   {"k", "t=1700000000", body, now},
		"garbage header": {"k", "v1=zz", body, now},
	} {
		if err := webhook.Verify(c.secret, c.header, c.body, c.at, 5*time.Minute); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}
