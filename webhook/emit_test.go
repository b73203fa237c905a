package webhook_test

import (
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/webhook"
)

// TestEmitAllocatesNothing: handing an event over copies it into the buffer and allocates
// nothing (ids, hashes and JSON are the dispatcher's work), also when it is dropped; a nil
// dispatcher (no webhooks on the node) is disabled.
func TestEmitAllocatesNothing(t *testing.T) {
	d := webhook.New(webhook.Config{Buffer: 64}, apps{}, zap.NewNop(), metrics.NewSet())
	ev := webhook.Event{Type: webhook.Sent, AppID: "a1", PushID: "p1", Channel: push.ChannelAPNs, DeviceID: "tok", At: time.Now()}
	if n := testing.AllocsPerRun(200, func() { d.Emit(ev) }); n != 0 {
		t.Fatalf("Emit allocates %v times per event", n)
	}
	if d.Dropped() == 0 {
		t.Fatal("no drop past a buffer of 64: the test did not cover the overflow path")
	}
	var none *webhook.Dispatcher
	if none.Enabled("a1") || none.Emit(ev) {
		t.Fatal("a nil dispatcher is enabled")
	}
}
