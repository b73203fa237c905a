package sender

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/sender/fcm"
	"github.com/pushd/pushd/store"
)

// apps is an in-memory AppSource.
type apps struct {
	mu sync.Mutex
	m  map[string]push.App
}

func (a *apps) GetApp(_ context.Context, id string) (push.App, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	app, ok := a.m[id]
	if !ok {
		return push.App{}, store.ErrNotFound
	}
	return app, nil
}

func (a *apps) set(app push.App) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]push.App{}
	}
	a.m[app.ID] = app
}

// invalidations records InvalidateToken calls.
type invalidations struct {
	mu    sync.Mutex
	list  []string
	since map[string]time.Time // by deviceID, when the gateway said
}

func (v *invalidations) InvalidateToken(_ context.Context, appID, objectID, deviceID string, since time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.list = append(v.list, appID+"/"+objectID+"/"+deviceID)
	if !since.IsZero() {
		if v.since == nil {
			v.since = map[string]time.Time{}
		}
		v.since[deviceID] = since
	}
	return nil
}

// DropVendorToken records a vendor_first dead token as "vendor:" + what InvalidateToken records.
func (v *invalidations) DropVendorToken(_ context.Context, appID, objectID, regID string, _ time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.list = append(v.list, "vendor:"+appID+"/"+objectID+"/"+regID)
	return nil
}

func (v *invalidations) got() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.list...)
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// sleeps records the waits a pool asked for and returns at once.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) max() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m time.Duration
	for _, d := range s.ds {
		m = max(m, d)
	}
	return m
}

type env struct {
	apns  *sim.APNs
	fcm   *sim.FCM
	apps  *apps
	inv   *invalidations
	clock *clock
	sl    *sleeps
	set   *metrics.Set
	d     *Dispatcher
}

const testTopic = "com.example.chat"

func apnsToken(i int) string { return fmt.Sprintf("%064x", i+1) }
func fcmToken(i int) string  { return fmt.Sprintf("reg:APA91b%08d", i) }

func newEnv(t *testing.T, tune func(*Config), apnsCfg sim.APNsConfig) *env {
	t.Helper()
	as, err := sim.NewAPNs(apnsCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = as.Close() })
	fs, err := sim.NewFCM(sim.FCMConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Close() })
	e := &env{apns: as, fcm: fs, apps: &apps{}, inv: &invalidations{}, clock: &clock{t: time.Now()}, sl: &sleeps{}, set: metrics.NewSet()}
	cfg := Config{
		Workers:     8,
		IdleTimeout: time.Minute,
		APNs:        apns.Config{ProdEndpoint: as.URL(), DevEndpoint: as.URL(), TLS: as.ClientTLS()},
		FCM:         fcm.Config{Endpoint: fs.URL(), TLS: fs.ClientTLS()},
		sleep:       e.sl.sleep,
		now:         e.clock.now,
	}
	if tune != nil {
		tune(&cfg)
	}
	e.d = New(cfg, e.apps, e.inv, zap.NewNop(), e.set)
	t.Cleanup(e.d.Close)
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{
		"apns": e.apnsCreds(t, true),
		"fcm":  e.fcmCreds(t),
	}})
	return e
}

func (e *env) apnsCreds(t *testing.T, trusted bool) json.RawMessage {
	t.Helper()
	var p8 []byte
	var err error
	if trusted {
		p8, err = e.apns.NewKey("KEY1234567", "TEAM123456")
	} else {
		p8, err = sim.NewAPNsKey("KEY1234567", "TEAM123456")
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(apns.CredentialsJSON{DefaultTopic: testTopic, Teams: []apns.TeamKey{{TeamID: "TEAM123456", KeyID: "KEY1234567", P8: string(p8)}}})
	return raw
}

func (e *env) fcmCreds(t *testing.T) json.RawMessage {
	t.Helper()
	sa, err := e.fcm.NewServiceAccount("demo-chat")
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

func apnsDelivery(app string, i int) push.Delivery {
	return push.Delivery{
		AppID: app, Prod: true, NotificationID: "n1",
		Message: &push.Message{Channel: push.ChannelAPNs, Body: []byte(`{"aps":{"alert":"hi"}}`), PushType: "alert", Priority: 10},
		Target:  push.Target{ObjectID: fmt.Sprintf("obj%d", i), Channel: push.ChannelAPNs, DeviceType: "ios", DeviceID: apnsToken(i)},
	}
}

func fcmDelivery(app string, i int) push.Delivery {
	return push.Delivery{
		AppID: app, NotificationID: "n1",
		Message: &push.Message{Channel: push.ChannelFCM, Body: []byte(`{"notification":{"title":"t","body":"b"}}`)},
		Target:  push.Target{ObjectID: fmt.Sprintf("fobj%d", i), Channel: push.ChannelFCM, DeviceType: "android", DeviceID: fcmToken(i)},
	}
}

func send(t *testing.T, d *Dispatcher, ds []push.Delivery) []push.Result {
	t.Helper()
	res := make([]push.Result, len(ds))
	if err := d.Send(context.Background(), ds, res); err != nil {
		t.Fatalf("Send: %v", err)
	}
	return res
}

func TestSenderDispatchOutcomes(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{})
	e.apns.MarkUnregistered(apnsToken(1))
	e.apns.MarkBadToken(apnsToken(2))
	e.fcm.MarkUnregistered(fcmToken(1))
	e.fcm.MarkBadToken(fcmToken(2))
	expired := apnsDelivery("app1", 3)
	expired.Message = &push.Message{Channel: push.ChannelAPNs, Body: expired.Message.Body, Expiration: e.clock.now().Add(-time.Second)}
	direct := push.Delivery{AppID: "app1", Message: &push.Message{}, Target: push.Target{Channel: push.ChannelDirect, DeviceID: "x"}}
	vivo := push.Delivery{AppID: "app1", Message: &push.Message{}, Target: push.Target{Channel: push.ChannelVivo, DeviceID: "x"}}
	noApp := apnsDelivery("ghost", 4)
	ds := []push.Delivery{
		apnsDelivery("app1", 0), apnsDelivery("app1", 1), apnsDelivery("app1", 2), expired,
		fcmDelivery("app1", 0), fcmDelivery("app1", 1), fcmDelivery("app1", 2),
		direct, vivo, noApp,
	}
	res := send(t, e.d, ds)
	want := []push.Result{
		{Outcome: push.OutcomeSent},
		{Outcome: push.OutcomeInvalidToken, Reason: "Unregistered"},
		{Outcome: push.OutcomeInvalidToken, Reason: "BadDeviceToken"},
		{Outcome: push.OutcomeExpired},
		{Outcome: push.OutcomeSent},
		{Outcome: push.OutcomeInvalidToken, Reason: "UNREGISTERED"},
		{Outcome: push.OutcomeInvalidToken, Reason: "INVALID_ARGUMENT"},
		{Outcome: push.OutcomeFailed, Reason: "channel direct not available"},
		{Outcome: push.OutcomeFailed, Reason: "no vivo credentials configured"},
		{Outcome: push.OutcomeFailed, Reason: "app not found"},
	}
	// Only APNs 410 says since when a token is dead: its result carries it too.
	if since := res[1].Since; since.IsZero() || time.Since(since) > time.Hour {
		t.Errorf("the 410's result has since %v, want its timestamp", since)
	}
	res[1].Since = time.Time{}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("delivery %d: got %+v, want %+v", i, res[i], want[i])
		}
	}
	inv := e.inv.got()
	wantInv := map[string]bool{
		"app1/obj1/" + apnsToken(1): true, "app1/obj2/" + apnsToken(2): true,
		"app1/fobj1/" + fcmToken(1): true, "app1/fobj2/" + fcmToken(2): true,
	}
	if len(inv) != len(wantInv) {
		t.Fatalf("invalidated %v", inv)
	}
	for _, k := range inv {
		if !wantInv[k] {
			t.Fatalf("unexpected invalidation %s", k)
		}
	}
	// Only APNs 410 says since when a token is dead; the invalidator gets it.
	e.inv.mu.Lock()
	since := e.inv.since
	e.inv.mu.Unlock()
	if len(since) != 1 || since[apnsToken(1)].IsZero() || time.Since(since[apnsToken(1)]) > time.Hour {
		t.Fatalf("invalidations' since %v, want the 410 timestamp of %s only", since, apnsToken(1))
	}
	if st := e.apns.Stats(); st.Requests != 3 || st.PerToken[apnsToken(3)] != 0 {
		t.Fatalf("apns simulator: %d requests (want 3: the expired one is never sent)", st.Requests)
	}
	if n := e.d.Pools(); n != 2 {
		t.Fatalf("%d pools, want 2 (apns prod team, fcm project)", n)
	}
	for _, m := range []string{
		`pushd_sender_deliveries_total{channel="apns",outcome="sent"} 1`,
		`pushd_sender_deliveries_total{channel="apns",outcome="invalid_token"} 2`,
		`pushd_sender_deliveries_total{channel="apns",outcome="expired"} 1`,
		`pushd_sender_rejections_total{channel="direct"} 1`,
		`pushd_sender_pools{channel="apns"} 1`,
		`pushd_sender_inflight_capacity{channel="apns"} 8`,
		`pushd_sender_queued{channel="apns"} 0`,
	} {
		if !strings.Contains(e.metrics(), m) {
			t.Errorf("metrics lack %s", m)
		}
	}
}

func (e *env) metrics() string {
	var b strings.Builder
	e.set.WritePrometheus(&b)
	return b.String()
}

func TestSenderBrownoutLosesNothing(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Workers = 16 }, sim.APNsConfig{})
	const n = 300
	e.apns.Inject(200, sim.Fault{Status: 503, Reason: "ServiceUnavailable"})
	ds := make([]push.Delivery, n)
	for i := range ds {
		ds[i] = apnsDelivery("app1", i)
	}
	res := send(t, e.d, ds)
	for i, r := range res {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	st := e.apns.Stats()
	if st.Accepted != n || len(st.PerToken) != n {
		t.Fatalf("accepted %d for %d tokens, want %d", st.Accepted, len(st.PerToken), n)
	}
	for tok, c := range st.PerToken {
		if c != 1 {
			t.Fatalf("token %s got %d pushes", tok, c)
		}
	}
	if !strings.Contains(e.metrics(), `pushd_sender_retries_total{channel="apns"} 200`) {
		t.Errorf("retries not counted: want 200")
	}
}

func TestSenderRetryAfterHonoured(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{})
	e.fcm.Inject(1, sim.Fault{Status: 429, Reason: "QUOTA_EXCEEDED", RetryAfter: 30 * time.Second})
	res := send(t, e.d, []push.Delivery{fcmDelivery("app1", 0)})
	if res[0].Outcome != push.OutcomeSent {
		t.Fatalf("got %+v", res[0])
	}
	if got := e.sl.max(); got < 30*time.Second {
		t.Fatalf("waited %s before retrying, want the Retry-After of 30s", got)
	}
}

// A delivery is retried until the retry horizon ends, then fails with the gateway's reason; a
// Retry-After past the horizon fails it at once, and one past its expiration expires it.
func TestSenderRetryHorizon(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RetryHorizon = time.Minute }, sim.APNsConfig{})
	e.d.cfg.sleep = func(ctx context.Context, d time.Duration) error { e.clock.add(d); return ctx.Err() }
	if err := e.apns.StartOutage(sim.Outage{Mode: sim.OutageStatus, For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	res := send(t, e.d, []push.Delivery{apnsDelivery("app1", 0)})
	if want := (push.Result{Outcome: push.OutcomeFailed, Reason: "gateway unavailable for the retry horizon (1m0s): ServiceUnavailable"}); res[0] != want {
		t.Fatalf("got %+v, want %+v", res[0], want)
	}
	// Backoff from 200ms doubling to 30s: a handful of attempts in a minute, not one per backoff step of the old 5.
	if n := e.apns.Stats().Outage; n < 5 || n > 12 {
		t.Fatalf("%d attempts within a 1m horizon, want 5..12", n)
	}
	e.fcm.Inject(1, sim.Fault{Status: 503, RetryAfter: 2 * time.Minute})
	res = send(t, e.d, []push.Delivery{fcmDelivery("app1", 0)})
	if want := (push.Result{Outcome: push.OutcomeFailed, Reason: "gateway unavailable for the retry horizon (1m0s): UNAVAILABLE"}); res[0] != want {
		t.Fatalf("got %+v, want %+v", res[0], want)
	}
	e.fcm.Inject(1, sim.Fault{Status: 503, RetryAfter: 30 * time.Second})
	dl := fcmDelivery("app1", 1)
	dl.Message = &push.Message{Channel: push.ChannelFCM, Body: dl.Message.Body, Expiration: e.clock.now().Add(10 * time.Second)}
	res = send(t, e.d, []push.Delivery{dl})
	if res[0] != (push.Result{Outcome: push.OutcomeExpired}) {
		t.Fatalf("Retry-After past the expiration: got %+v, want expired", res[0])
	}
}

func TestSenderBreakerStopsPool(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Workers = 4; c.AppCacheTTL = time.Second }, sim.APNsConfig{})
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{"apns": e.apnsCreds(t, false)}})
	ds := make([]push.Delivery, 50)
	for i := range ds {
		ds[i] = apnsDelivery("app1", i)
	}
	res := send(t, e.d, ds)
	for i, r := range res {
		if want := (push.Result{Outcome: push.OutcomeFailed, Reason: "credentials rejected: InvalidProviderToken"}); r != want {
			t.Fatalf("delivery %d: got %+v, want %+v", i, r, want)
		}
	}
	first := e.apns.Stats().Requests
	if first > 4 {
		t.Fatalf("the simulator got %d requests; the breaker should stop after the in-flight ones (4)", first)
	}
	res = send(t, e.d, ds[:10])
	if res[0].Reason != "credentials rejected: InvalidProviderToken" || e.apns.Stats().Requests != first {
		t.Fatalf("a later batch was not failed fast: %+v, %d requests", res[0], e.apns.Stats().Requests)
	}
	if !strings.Contains(e.metrics(), `pushd_sender_breaker_trips_total{channel="apns"} 1`) {
		t.Error("breaker trip not counted")
	}
	// New credentials: a new pool, deliveries flow again.
	e.apps.set(push.App{ID: "app1", Credentials: map[string]json.RawMessage{"apns": e.apnsCreds(t, true)}})
	e.clock.add(2 * time.Second)
	res = send(t, e.d, ds[:10])
	for i, r := range res {
		if r.Outcome != push.OutcomeSent {
			t.Fatalf("after new credentials, delivery %d: %+v", i, r)
		}
	}
}

func TestSenderSenderIDMismatchScoped(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{})
	e.fcm.MarkSenderMismatch(fcmToken(1))
	res := send(t, e.d, []push.Delivery{fcmDelivery("app1", 0)})
	if res[0].Outcome != push.OutcomeSent {
		t.Fatal(res[0])
	}
	// The pool has proven its credentials: the mismatch is this token's, not the app's.
	res = send(t, e.d, []push.Delivery{fcmDelivery("app1", 1), fcmDelivery("app1", 2)})
	if want := (push.Result{Outcome: push.OutcomeFailed, Reason: "SENDER_ID_MISMATCH"}); res[0] != want || res[1].Outcome != push.OutcomeSent {
		t.Fatalf("got %+v", res)
	}
	if len(e.inv.got()) != 0 {
		t.Fatal("a sender-id mismatch deleted an installation")
	}
}

func TestSenderFCMRefreshOn401(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{})
	send(t, e.d, []push.Delivery{fcmDelivery("app1", 0)})
	e.fcm.ExpireAccessTokens()
	res := send(t, e.d, []push.Delivery{fcmDelivery("app1", 1), fcmDelivery("app1", 2)})
	if res[0].Outcome != push.OutcomeSent || res[1].Outcome != push.OutcomeSent {
		t.Fatalf("got %+v", res)
	}
	if n := e.fcm.Stats().AuthTokens; n != 2 {
		t.Fatalf("simulator issued %d access tokens, want 2", n)
	}
}

func TestSenderRateLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Rates = map[string]float64{"app1/apns": 100}; c.Burst = 1 }, sim.APNsConfig{})
	ds := make([]push.Delivery, 11)
	for i := range ds {
		ds[i] = apnsDelivery("app1", i)
	}
	send(t, e.d, ds)
	// The clock stands still: the 10 deliveries beyond the burst each wait 10ms longer.
	if got, want := e.sl.max(), 100*time.Millisecond; got < want-time.Millisecond || got > want+time.Millisecond {
		t.Fatalf("longest rate wait %s, want %s", got, want)
	}
}

func TestSenderBucket(t *testing.T) {
	c := &clock{t: time.Now()}
	b := newBucket(10, 2, nil, c.now)
	var got []time.Duration
	for range 4 {
		got = append(got, b.reserve())
	}
	want := []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond}
	for i := range want {
		if d := got[i] - want[i]; d < -time.Microsecond || d > time.Microsecond {
			t.Fatalf("reserve %d = %s, want %s", i, got[i], want[i])
		}
	}
	c.add(time.Second) // refills to the burst, after paying the debt
	if w := b.reserve(); w != 0 {
		t.Fatalf("after a second: wait %s", w)
	}
}

func TestSenderIdlePoolClosed(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{})
	send(t, e.d, []push.Delivery{apnsDelivery("app1", 0), fcmDelivery("app1", 0)})
	if n := e.d.Pools(); n != 2 {
		t.Fatalf("%d pools", n)
	}
	e.clock.add(30 * time.Second)
	e.d.closeIdle()
	if n := e.d.Pools(); n != 2 {
		t.Fatalf("pools closed before the idle timeout: %d left", n)
	}
	send(t, e.d, []push.Delivery{apnsDelivery("app1", 1)})
	e.clock.add(45 * time.Second)
	e.d.closeIdle()
	if n := e.d.Pools(); n != 1 {
		t.Fatalf("want the fcm pool closed and the apns pool (used 45s ago) open; %d open", n)
	}
	if !strings.Contains(e.metrics(), `pushd_sender_pools{channel="fcm"} 0`) {
		t.Error("closed pool still counted")
	}
	res := send(t, e.d, []push.Delivery{fcmDelivery("app1", 1)})
	if res[0].Outcome != push.OutcomeSent || e.d.Pools() != 2 {
		t.Fatalf("pool not recreated: %+v, %d pools", res[0], e.d.Pools())
	}
}

func TestSenderRunAndClose(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{Knobs: sim.Knobs{Latency: time.Minute}})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error)
	go func() { ran <- e.d.Run(ctx) }()
	sent := make(chan error)
	go func() {
		sent <- e.d.Send(context.Background(), []push.Delivery{apnsDelivery("app1", 0)}, make([]push.Result, 1))
	}()
	waitfor.True(t, 10*time.Second, "a request in flight", func() bool {
		return strings.Contains(e.metrics(), `pushd_sender_inflight{channel="apns"} 1`)
	})
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := <-sent; !errors.Is(err, ErrClosed) {
		t.Fatalf("Send during close: %v, want ErrClosed", err)
	}
	if err := e.d.Send(context.Background(), []push.Delivery{apnsDelivery("app1", 0)}, make([]push.Result, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after close: %v", err)
	}
}

func TestSenderSendCanceled(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{Knobs: sim.Knobs{Latency: time.Minute}})
	ctx, cancel := context.WithCancel(context.Background())
	res := make([]push.Result, 2)
	sent := make(chan error)
	go func() { sent <- e.d.Send(ctx, []push.Delivery{apnsDelivery("app1", 0), apnsDelivery("app1", 1)}, res) }()
	waitfor.True(t, 10*time.Second, "requests in flight", func() bool {
		return strings.Contains(e.metrics(), `pushd_sender_inflight{channel="apns"} `) &&
			!strings.Contains(e.metrics(), `pushd_sender_inflight{channel="apns"} 0`)
	})
	cancel()
	if err := <-sent; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	waitfor.True(t, 10*time.Second, "the pool to settle", func() bool {
		return strings.Contains(e.metrics(), `pushd_sender_queued{channel="apns"} 0`)
	})
	if strings.Contains(e.metrics(), `outcome="failed"} 1`) {
		t.Fatal("an abandoned delivery was counted as failed")
	}
}

func TestSenderInvalidGuard(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InvalidGuard = 5; c.Workers = 1 }, sim.APNsConfig{})
	ds := make([]push.Delivery, 20)
	for i := range ds {
		e.apns.MarkBadToken(apnsToken(i)) // as a wrong-environment setup answers
		ds[i] = apnsDelivery("app1", i)
	}
	res := send(t, e.d, ds)
	for i, r := range res {
		if i < 5 && r.Outcome != push.OutcomeInvalidToken || i >= 5 && (r.Outcome != push.OutcomeFailed || !strings.HasPrefix(r.Reason, "BadDeviceToken: not deleted")) {
			t.Fatalf("delivery %d: %+v", i, r)
		}
	}
	if n := len(e.inv.got()); n != 5 {
		t.Fatalf("%d installations deleted, want 5", n)
	}
	// One success does not lift the guard while dead tokens outnumber successes: a dev push
	// that reaches a few sandbox devices and many production tokens deletes none of those.
	send(t, e.d, []push.Delivery{apnsDelivery("app1", 100)})
	if res := send(t, e.d, ds[:1]); res[0].Outcome != push.OutcomeFailed {
		t.Fatalf("after one success: %+v", res[0])
	}
	// Once successes outnumber the dead-token replies, dead tokens are deleted again.
	ok := make([]push.Delivery, 25)
	for i := range ok {
		ok[i] = apnsDelivery("app1", 200+i)
	}
	send(t, e.d, ok)
	if res := send(t, e.d, ds[:1]); res[0].Outcome != push.OutcomeInvalidToken {
		t.Fatalf("after successes outnumber dead tokens: %+v", res[0])
	}
}

// A dead token of a delivery with InvalidateLater is reported, with the gateway's since, and
// its installation is left to the caller (fan-out deletes it after the checkpoint that counts
// it); a vendor_first delivery's dead vendor token is still dropped at once.
func TestSenderInvalidateLaterLeavesTheDeletion(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{})
	e.apns.MarkUnregistered(apnsToken(1))
	e.fcm.MarkUnregistered(fcmToken(1))
	ds := []push.Delivery{apnsDelivery("app1", 1), fcmDelivery("app1", 1), apnsDelivery("app1", 2)}
	for i := range ds {
		ds[i].InvalidateLater = true
	}
	e.apns.MarkUnregistered(apnsToken(2))
	ds[2].InvalidateLater = false // the sender deletes this one, as before
	res := send(t, e.d, ds)
	for i, r := range res {
		if r.Outcome != push.OutcomeInvalidToken {
			t.Fatalf("delivery %d: %+v, want invalid_token", i, r)
		}
	}
	if res[0].Since.IsZero() || !res[1].Since.IsZero() {
		t.Errorf("since: APNs %v (want the 410's timestamp), FCM %v (want zero: it does not say)", res[0].Since, res[1].Since)
	}
	if inv := e.inv.got(); len(inv) != 1 || inv[0] != "app1/obj2/"+apnsToken(2) {
		t.Fatalf("the sender deleted %v, want only the installation of the delivery without InvalidateLater", inv)
	}
}

// A delivery that expires while it waits for the pool's rate is not sent: it is expired.
func TestSenderExpiredWhileRateLimited(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Rates = map[string]float64{"app1/apns": 1}; c.Burst = 1; c.Workers = 1 }, sim.APNsConfig{})
	e.d.cfg.sleep = func(ctx context.Context, d time.Duration) error { e.clock.add(d); return ctx.Err() }
	ds := []push.Delivery{apnsDelivery("app1", 0), apnsDelivery("app1", 1)}
	for i := range ds {
		m := *ds[i].Message
		m.Expiration = e.clock.now().Add(500 * time.Millisecond)
		ds[i].Message = &m
	}
	res := send(t, e.d, ds)
	if res[1].Outcome != push.OutcomeExpired || e.apns.Stats().Requests != 1 {
		t.Fatalf("sent after a 1s rate wait past its 500ms expiry: %+v, %d requests", res[1], e.apns.Stats().Requests)
	}
}

// FCM QUOTA_EXCEEDED without Retry-After waits at least a minute (gateways.md §2.3).
func TestSenderQuotaWithoutRetryAfterWaitsAMinute(t *testing.T) {
	e := newEnv(t, nil, sim.APNsConfig{})
	e.fcm.Inject(1, sim.Fault{Status: 429, Reason: "QUOTA_EXCEEDED"})
	if res := send(t, e.d, []push.Delivery{fcmDelivery("app1", 0)}); res[0].Outcome != push.OutcomeSent {
		t.Fatalf("got %+v", res[0])
	}
	if got := e.sl.max(); got < time.Minute {
		t.Fatalf("retried a quota refusal after %s, want >= 1m", got)
	}
}

// TestSenderBatchCutShortIsNotSuccess pins Send's answer once every delivery of a batch has
// finished: the workers finish the deliveries of a canceled call too (with results that are
// not outcomes), so a finished batch is a success only when every result is final.
func TestSenderBatchCutShortIsNotSuccess(t *testing.T) {
	d := &Dispatcher{closed: make(chan struct{})}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	newBatch := func() *batch { return &batch{res: make([]push.Result, 2), left: 2, done: make(chan struct{})} }

	b := newBatch()
	b.finish(0, push.Result{Outcome: push.OutcomeSent}, true)
	b.finish(1, push.Result{Outcome: push.OutcomeFailed, Reason: "canceled"}, false)
	if err := d.settled(canceled, b); !errors.Is(err, context.Canceled) {
		t.Fatalf("batch with a canceled delivery: %v, want context.Canceled", err)
	}

	b = newBatch()
	b.finish(0, push.Result{Outcome: push.OutcomeSent}, true)
	b.finish(1, push.Result{Outcome: push.OutcomeFailed, Reason: "sender closed"}, false)
	close(d.closed)
	if err := d.settled(canceled, b); !errors.Is(err, ErrClosed) {
		t.Fatalf("batch cut short by Close: %v, want ErrClosed", err)
	}

	b = newBatch()
	b.finish(0, push.Result{Outcome: push.OutcomeSent}, true)
	b.finish(1, push.Result{Outcome: push.OutcomeInvalidToken}, true)
	if err := d.settled(canceled, b); err != nil {
		t.Fatalf("batch of final results, context ended after: %v, want success", err)
	}
}
