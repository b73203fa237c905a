package sender

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
)

// newClockEnv is the env of a vendor's dispatcher on one clock that its simulator, its client
// and the dispatcher's waits share: the waits move it, so a wait for a quota reset ends on the
// simulator's next day. Give the simulator e.clock.now, then call startVendor.
func newClockEnv() *env {
	return &env{apps: &apps{}, inv: &invalidations{}, clock: &clock{t: time.Now()}, set: metrics.NewSet()}
}

// startVendor builds e's dispatcher from c (the vendor driver's config) with 16 workers and
// waits that move e's clock, then tune (nil: none); app1 gets profiles as its credentials of
// channel.
func (e *env) startVendor(t *testing.T, c Config, tune func(*Config), channel string, profiles any) {
	t.Helper()
	c.Workers, c.IdleTimeout = 16, time.Minute
	c.sleep = func(ctx context.Context, d time.Duration) error {
		e.clock.add(d)
		return ctx.Err()
	}
	c.now = e.clock.now
	if tune != nil {
		tune(&c)
	}
	e.d = New(c, e.apps, e.inv, zap.NewNop(), e.set)
	t.Cleanup(e.d.Close)
	creds, err := json.Marshal(profiles)
	if err != nil {
		t.Fatal(err)
	}
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{channel: creds}})
}

// vendorDeliveries are n deliveries to app1 of one message of channel (body, expiring at exp),
// the i-th to the android installation object+i of token(i).
func vendorDeliveries(n int, channel, body string, exp time.Time, object string, token func(int) string) []push.Delivery {
	m := &push.Message{Channel: channel, Body: []byte(body), Expiration: exp}
	ds := make([]push.Delivery, n)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "app1", NotificationID: "n1", Message: m,
			Target: push.Target{ObjectID: fmt.Sprintf("%s%d", object, i), Channel: channel, DeviceType: "android", DeviceID: token(i)}}
	}
	return ds
}

// checkDeadTokenGuard fails t unless, of 40 deliveries to dead tokens under an InvalidGuard
// of 5, exactly 5 were deleted as invalid (their reason holding reason) and invalidated, and
// the other 35 failed as not deleted.
func (e *env) checkDeadTokenGuard(t *testing.T, res []push.Result, reason string) {
	t.Helper()
	deleted, guarded := 0, 0
	for i, r := range res {
		switch {
		case r.Outcome == push.OutcomeInvalidToken && strings.Contains(r.Reason, reason):
			deleted++
		case r.Outcome == push.OutcomeFailed && strings.Contains(r.Reason, "not deleted"):
			guarded++
		default:
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	if deleted != 5 || guarded != 35 || len(e.inv.got()) != 5 {
		t.Fatalf("deleted %d (invalidated %d), guarded %d; want 5, 35", deleted, len(e.inv.got()), guarded)
	}
}
