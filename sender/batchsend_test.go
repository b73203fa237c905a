package sender

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// poolWorkers is how many worker goroutines the pools of channel ch started.
func (d *Dispatcher) poolWorkers(ch string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for k, p := range d.pools {
		if k.channel == ch {
			n += int(p.workers.Load())
		}
	}
	return n
}

// The first attempt of a call's APNs and FCM deliveries goes out in batches, on the Send
// call's goroutine (sendBatch): a batch all sent starts no worker, and every token reaches the
// simulator once. Answers that need more than a first attempt (a dead token, a retry) go on in
// the workers with the same outcomes as without batches.
func TestSenderBatchFirstAttempt(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Workers = 64 }, sim.APNsConfig{})
	const n = 300 // more than Workers: several batches per pool
	ds := make([]push.Delivery, 0, 2*n)
	for i := range n {
		ds = append(ds, apnsDelivery("app1", i), fcmDelivery("app1", i))
	}
	for i, r := range send(t, e.d, ds) {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	if w := e.d.poolWorkers(push.ChannelAPNs) + e.d.poolWorkers(push.ChannelFCM); w != 0 {
		t.Errorf("%d workers started for deliveries all sent at their first attempt; want none (batched)", w)
	}
	ast, fst := e.apns.Stats(), e.fcm.Stats()
	for i := range n {
		if c := ast.PerToken[apnsToken(i)]; c != 1 {
			t.Fatalf("apns token %d accepted %d times, want 1", i, c)
		}
		if c := fst.PerToken[fcmToken(i)]; c != 1 {
			t.Fatalf("fcm token %d accepted %d times, want 1", i, c)
		}
	}

	// A dead token and a 503 in the next call: the workers take those two over.
	e.apns.MarkUnregistered(apnsToken(n + 1))
	e.fcm.Inject(1, sim.Fault{Status: 503})
	more := []push.Delivery{apnsDelivery("app1", n), apnsDelivery("app1", n+1), fcmDelivery("app1", n)}
	res := send(t, e.d, more)
	if res[0].Outcome != push.OutcomeSent || res[1].Outcome != push.OutcomeInvalidToken || res[2].Outcome != push.OutcomeSent {
		t.Fatalf("got %+v, want sent, invalid token, sent (after a retry)", res)
	}
	if got := e.inv.got(); len(got) != 1 || got[0] != "app1/obj301/"+apnsToken(n+1) {
		t.Fatalf("invalidated %v, want the dead token's installation", got)
	}
	if e.sl.max() == 0 {
		t.Error("the 503 was not retried after a backoff")
	}
	if w := e.d.poolWorkers(push.ChannelAPNs) + e.d.poolWorkers(push.ChannelFCM); w == 0 {
		t.Error("no worker took over the dead token and the retry")
	}
}

// A Send call whose context ends while its batch is at the gateway returns, and counts none
// of the batch's deliveries as final.
func TestSenderBatchCanceled(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{Knobs: sim.Knobs{Latency: time.Hour}}) // answers only to a canceled request
	ctx, cancel := context.WithCancel(context.Background())
	ds := []push.Delivery{apnsDelivery("app1", 1), apnsDelivery("app1", 2)}
	res := make([]push.Result, len(ds))
	done := make(chan error, 1)
	go func() { done <- e.d.Send(ctx, ds, res) }()
	waitfor.True(t, 20*time.Second, "the batch at the simulator", func() bool {
		return gauge(e.set, `pushd_sender_inflight{channel="apns"}`) == "2"
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v for a canceled batch, want context.Canceled", err)
	}
	waitfor.True(t, 20*time.Second, "the pool idle again", func() bool {
		return gauge(e.set, `pushd_sender_inflight{channel="apns"}`) == "0" && gauge(e.set, `pushd_sender_queued{channel="apns"}`) == "0"
	})
	if got := gauge(e.set, `pushd_sender_deliveries_total{channel="apns",outcome="sent"}`); got != "0" && got != "absent" {
		t.Fatalf("%s deliveries counted sent", got)
	}
}
