package direct_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
)

const (
	testApp = "directapp"
	testKey = "directkey"
)

// rig is a gateway over a real Pebble store, serving real WebSocket connections on loopback.
type rig struct {
	st   *pebble.Store
	core *direct.Core
	srv  *direct.Server
	url  string
	off  int64
	stop func() // stops the server (once) and waits for it
}

func newRig(t testing.TB, cfg direct.Config) *rig {
	t.Helper()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	app := push.App{ID: testApp, Name: "direct", AppKey: testKey, MasterKey: "master", Settings: push.DefaultSettings(), CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := st.CreateApp(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	cfg.Addr = "127.0.0.1:0"
	if cfg.ReadLoop == "" {
		cfg.ReadLoop = rigReadLoop
	}
	set := metrics.NewSet()
	r := &rig{st: st}
	r.core = direct.NewCore(cfg, st, zap.NewNop(), set)
	r.srv = direct.NewServer(cfg, r.core, st, st, zap.NewNop(), set)
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.srv.Run(ctx) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("server Run: %v", err)
			}
		})
	}
	t.Cleanup(r.stop)
	r.url = "ws://" + r.srv.Addr().String() + "/1.1/connect"
	return r
}

// installation stores an installation of the test app.
func (r *rig) installation(t *testing.T, iid, deviceType, vendor string) {
	t.Helper()
	rt := push.Route{ObjectID: "o-" + iid, DeviceType: deviceType, UpdatedAt: time.Now().UnixMilli()}
	rt.InstallationID = iid
	if deviceType == push.DeviceIOS {
		rt.DeviceToken = "tok-" + iid
	}
	if vendor != "" {
		rt.Vendor, rt.RegistrationID = vendor, "reg-"+iid
	}
	doc, _ := json.Marshal(map[string]any{"objectId": rt.ObjectID, "deviceType": deviceType, "installationId": rt.InstallationID})
	if err := r.st.PutInstallation(context.Background(), testApp, push.DefaultBuckets, push.Installation{Route: rt, CreatedAt: rt.UpdatedAt, Doc: doc}); err != nil {
		t.Fatal(err)
	}
}

// record stores the push record of message id.
func (r *rig) record(t *testing.T, id string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	n := push.Notification{ObjectID: id, AppID: testApp, NotificationID: "nid" + id, JobID: "job-" + id, Status: push.StatusInProcess,
		CreatedAt: now, UpdatedAt: now, Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}
	if err := r.st.CreateNotification(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// consume hands the gateway one push.direct record for iid, as the log would.
func (r *rig) consume(t *testing.T, iid, id string, exp time.Time) {
	t.Helper()
	m := push.DirectMessage{AppID: testApp, InstallationID: iid, ID: id, NotificationID: "nid" + id, Data: json.RawMessage(`{"alert":"` + id + `"}`)}
	if !exp.IsZero() {
		m.Expires = exp.UnixMilli()
	}
	v, _ := json.Marshal(m)
	r.off++
	if err := r.core.Handle(context.Background(), queue.Message{Topic: queue.TopicDirect, Offset: r.off, Key: []byte(iid), Value: v}); err != nil {
		t.Fatalf("Handle(%s): %v", id, err)
	}
}

func (r *rig) tally(t *testing.T, id string) push.Tally {
	t.Helper()
	n, err := r.st.GetNotification(context.Background(), testApp, id)
	if err != nil {
		t.Fatal(err)
	}
	return n.Counts[push.ChannelDirect]
}

func (r *rig) cached(t *testing.T, iid string) []string {
	t.Helper()
	ms, err := r.st.OfflineMessages(context.Background(), testApp, iid, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

func (r *rig) dial(t *testing.T, cfg sim.DeviceConfig) (*sim.Device, sim.Hello, error) {
	t.Helper()
	if cfg.AppID == "" {
		cfg.AppID, cfg.AppKey = testApp, testKey
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, h, err := sim.DialDeviceAt(ctx, r.url, cfg)
	if err == nil {
		t.Cleanup(d.Close)
	}
	return d, h, err
}

func (r *rig) mustDial(t *testing.T, cfg sim.DeviceConfig) (*sim.Device, sim.Hello) {
	t.Helper()
	d, h, err := r.dial(t, cfg)
	if err != nil {
		t.Fatalf("dial %s: %v", cfg.InstallationID, err)
	}
	return d, h
}

// TestDirectOnlineDeliveryAndArrival: a connected device gets a message at once, counted
// sent; its ack removes it from the cache and counts one arrival.
func TestDirectOnlineDeliveryAndArrival(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "dev1", push.DeviceAndroid, "")
	r.record(t, "m1")
	got := make(chan sim.DevicePush, 1)
	d, h := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1", OnPush: func(p sim.DevicePush) { got <- p }})
	if h.V != 1 || h.Offline != 0 || h.Heartbeat != direct.DefaultHeartbeat.Seconds() {
		t.Errorf("hello %+v", h)
	}
	r.consume(t, "dev1", "m1", time.Time{})
	select {
	case p := <-got:
		if p.ID != "m1" || p.NID != "nidm1" || string(p.Data) != `{"alert":"m1"}` {
			t.Errorf("push frame %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no push frame")
	}
	waitfor.True(t, 10*time.Second, "the arrival counted", func() bool { return r.tally(t, "m1").Arrivals == 1 })
	if tl := r.tally(t, "m1"); !tl.Equal(push.Tally{Sent: 1, Arrivals: 1}) {
		t.Errorf("tally %+v, want sent 1 arrivals 1", tl)
	}
	if c := r.cached(t, "dev1"); len(c) != 0 {
		t.Errorf("still cached after ack: %v", c)
	}
	// The same record consumed again (a crash before its commit) is neither sent nor counted again.
	r.consume(t, "dev1", "m1", time.Time{})
	if tl := r.tally(t, "m1"); !tl.Equal(push.Tally{Sent: 1, Arrivals: 1}) {
		t.Errorf("tally after a second copy %+v", tl)
	}
	if n := d.Ledger().Times("m1"); n != 1 {
		t.Errorf("m1 received %d times, want 1", n)
	}
}

// TestDirectOfflineFlushInOrder: messages for an offline device are cached and flushed in
// order on connect; expired and cancelled ones never arrive; unacked ones stay cached.
func TestDirectOfflineFlushInOrder(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "dev1", push.DeviceAndroid, "")
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		r.record(t, id)
	}
	r.consume(t, "dev1", "a1", time.Time{})
	r.consume(t, "dev1", "a2", time.Now().Add(time.Hour))
	r.consume(t, "dev1", "a3", time.Now().Add(-time.Second)) // expired before the gateway got it
	r.consume(t, "dev1", "gone", time.Time{})                // its push was cancelled: no record
	r.consume(t, "dev1", "a4", time.Time{})
	if tl := r.tally(t, "a3"); !tl.Equal(push.Tally{Expired: 1}) {
		t.Errorf("expired message tally %+v", tl)
	}
	d, h := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1", NoAck: true})
	if h.Offline != 3 {
		t.Errorf("hello says %d cached, want 3", h.Offline)
	}
	waitfor.True(t, 10*time.Second, "the cache flushed", func() bool { return len(d.Ledger().IDs()) == 3 })
	if ids := d.Ledger().IDs(); !slices.Equal(ids, []string{"a1", "a2", "a4"}) {
		t.Errorf("received %v, want [a1 a2 a4] in order", ids)
	}
	// Unacked: still cached, and flushed again on the next connect.
	if c := r.cached(t, "dev1"); !slices.Equal(c, []string{"a1", "a2", "a4"}) {
		t.Errorf("cached %v", c)
	}
	d.Close()
	d2, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
	waitfor.True(t, 10*time.Second, "the second flush acked", func() bool { return len(r.cached(t, "dev1")) == 0 })
	for _, id := range []string{"a1", "a2", "a4"} {
		if tl := r.tally(t, id); !tl.Equal(push.Tally{Sent: 1, Arrivals: 1}) {
			t.Errorf("%s tally %+v, want sent 1 arrivals 1", id, tl)
		}
		if !d2.Ledger().Acked(id) {
			t.Errorf("%s not acked", id)
		}
	}
}

// TestDirectOfflineBound: past the per-device bound the oldest cached messages are dropped.
func TestDirectOfflineBound(t *testing.T) {
	r := newRig(t, direct.Config{OfflineLimit: 2})
	r.installation(t, "dev1", push.DeviceAndroid, "")
	for _, id := range []string{"b1", "b2", "b3"} {
		r.record(t, id)
		r.consume(t, "dev1", id, time.Time{})
	}
	d, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
	waitfor.True(t, 10*time.Second, "the flush", func() bool { return len(d.Ledger().IDs()) == 2 })
	if ids := d.Ledger().IDs(); !slices.Equal(ids, []string{"b2", "b3"}) {
		t.Errorf("received %v, want [b2 b3]", ids)
	}
}

// TestDirectNewerConnectionReplacesOlder: one live connection per installation.
func TestDirectNewerConnectionReplacesOlder(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "dev1", push.DeviceAndroid, "")
	r.record(t, "c1")
	d1, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
	d2, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
	select {
	case <-d1.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the older connection is still open")
	}
	if code, reason := d1.CloseCode(); code != direct.CloseReplaced || reason == "" {
		t.Errorf("older connection closed with %d %q, want %d", code, reason, direct.CloseReplaced)
	}
	r.consume(t, "dev1", "c1", time.Time{})
	waitfor.True(t, 10*time.Second, "the newer connection got c1", func() bool { return d2.Ledger().Times("c1") == 1 })
	if d1.Ledger().Times("c1") != 0 {
		t.Error("the replaced connection got c1")
	}
}

// TestDirectRefusals: each refused connect ends with its documented close code and a reason.
func TestDirectRefusals(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "and1", push.DeviceAndroid, "")
	r.installation(t, "ios1", push.DeviceIOS, "")
	r.installation(t, "hms1", push.DeviceAndroid, "HMS")
	cases := []struct {
		name string
		cfg  sim.DeviceConfig
		url  string
		code int
	}{
		{"unknown installation", sim.DeviceConfig{InstallationID: "nope"}, "", direct.CloseNotFound},
		{"ios installation", sim.DeviceConfig{InstallationID: "ios1"}, "", direct.CloseNotDirect},
		{"vendor installation", sim.DeviceConfig{InstallationID: "hms1"}, "", direct.CloseNotDirect},
		{"wrong key", sim.DeviceConfig{InstallationID: "and1", AppID: testApp, AppKey: "wrong"}, "", direct.CloseUnauthorized},
		{"unknown app", sim.DeviceConfig{InstallationID: "and1", AppID: "other", AppKey: testKey}, "", direct.CloseUnauthorized},
		{"missing installation id", sim.DeviceConfig{}, "", direct.CloseBadRequest},
		{"unsupported version", sim.DeviceConfig{InstallationID: "and1"}, "?v=9", direct.CloseBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg.AppID == "" {
				cfg.AppID, cfg.AppKey = testApp, testKey
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			url := r.url
			if tc.url != "" {
				url += tc.url + "&x=" // DialDeviceAt appends its own query
			}
			_, _, err := sim.DialDeviceAt(ctx, url, cfg)
			var ref *sim.RefusedError
			if !errors.As(err, &ref) || ref.Code != tc.code || ref.Reason == "" {
				t.Errorf("dial: %v; want close code %d with a reason", err, tc.code)
			}
		})
	}
	if _, _, err := r.dial(t, sim.DeviceConfig{InstallationID: "and1"}); err != nil {
		t.Errorf("a good device is refused: %v", err)
	}
	if _, _, err := r.dial(t, sim.DeviceConfig{InstallationID: "and1", Sign: true}); err != nil {
		t.Errorf("a device with a signature is refused: %v", err)
	}
}

// TestDirectHeartbeatAndLimits: a silent connection is closed after two periods, bad frames
// close with a reason, and connects per second per app are bounded; the server lives on.
func TestDirectHeartbeatAndLimits(t *testing.T) {
	r := newRig(t, direct.Config{Heartbeat: 200 * time.Millisecond, MaxFrame: 512, ConnectRate: 0.001, ConnectBurst: 5})
	r.installation(t, "dev1", push.DeviceAndroid, "")
	closedWith := func(d *sim.Device) int {
		t.Helper()
		select {
		case <-d.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("connection still open")
		}
		code, _ := d.CloseCode()
		return code
	}
	silent, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1", NoPing: true})
	if code := closedWith(silent); code != direct.CloseHeartbeat {
		t.Errorf("silent connection closed with %d, want %d", code, direct.CloseHeartbeat)
	}
	for _, tc := range []struct {
		frame string
		code  int
	}{
		{`not json`, direct.CloseBadFrame},
		{`{"op":"dance"}`, direct.CloseBadFrame},
		{`{"op":"ack","ids":[]}`, direct.CloseBadFrame},
		{`{"op":"ack","ids":["` + string(make([]byte, 600)) + `"]}`, direct.CloseTooBig},
	} {
		d, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
		// The server may close on a too large frame's header, before the device wrote it all:
		// the write error is then expected; the close code below is the check.
		_ = d.Send([]byte(tc.frame))
		if code := closedWith(d); code != tc.code {
			t.Errorf("frame %.20q closed with %d, want %d", tc.frame, code, tc.code)
		}
	}
	// The burst (5) is spent: the next connect is refused, and the one pinging stays alive.
	_, _, err := r.dial(t, sim.DeviceConfig{InstallationID: "dev1"})
	var ref *sim.RefusedError
	if !errors.As(err, &ref) || ref.Code != direct.CloseTooMany {
		t.Errorf("connect past the rate: %v, want close code %d", err, direct.CloseTooMany)
	}
}

// TestDirectConnectionPings: a device that pings stays connected past two periods.
func TestDirectConnectionPings(t *testing.T) {
	r := newRig(t, direct.Config{Heartbeat: 250 * time.Millisecond})
	r.installation(t, "dev1", push.DeviceAndroid, "")
	d, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
	// Pinging at half the period, 8 pongs span 4 periods: twice the silence that closes.
	waitfor.True(t, 10*time.Second, "8 pongs", func() bool { return d.Pongs() >= 8 })
	r.record(t, "p1")
	r.consume(t, "dev1", "p1", time.Time{})
	waitfor.True(t, 10*time.Second, "delivery of p1", func() bool { return d.Ledger().Times("p1") == 1 })
	select {
	case <-d.Done():
		code, reason := d.CloseCode()
		t.Fatalf("pinging device was closed: %d %s", code, reason)
	default:
	}
	if r.core.Connected() != 1 {
		t.Errorf("%d connected, want 1", r.core.Connected())
	}
}

// TestDirectStopClosesGoingAway: on stop every device is told 1001 and the server returns
// once its connections are gone.
func TestDirectStopClosesGoingAway(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "dev1", push.DeviceAndroid, "")
	r.installation(t, "dev2", push.DeviceAndroid, "")
	d1, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
	d2, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev2"})
	r.stop()
	for _, d := range []*sim.Device{d1, d2} {
		<-d.Done()
		if code, _ := d.CloseCode(); code != direct.CloseGoingAway {
			t.Errorf("closed with %d, want %d", code, direct.CloseGoingAway)
		}
	}
	if n := r.core.Connected(); n != 0 {
		t.Errorf("%d sessions left after stop", n)
	}
}

var _ store.Store = (*pebble.Store)(nil)

// TestDirectNoDuplicateWhenConnectRacesDelivery: a message cached while a device connects,
// just before the connect's flush reads the cache, reaches the device once, not once from the
// flush and once live.
func TestDirectNoDuplicateWhenConnectRacesDelivery(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "dev1", push.DeviceAndroid, "")
	r.record(t, "race1")
	r.record(t, "after1")
	handled := make(chan struct{})
	direct.SetAfterAttach(r.core, func() {
		direct.SetAfterAttach(r.core, nil)
		// The gateway consumes race1 now: cached, then its live write waits for the flush.
		go func() {
			defer close(handled)
			r.consume(t, "dev1", "race1", time.Time{})
		}()
		waitfor.True(t, 10*time.Second, "race1 cached", func() bool { return slices.Contains(r.cached(t, "dev1"), "race1") })
	})
	d, h := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1", NoAck: true})
	<-handled
	if h.Offline != 1 {
		t.Errorf("hello says %d cached, want 1", h.Offline)
	}
	r.consume(t, "dev1", "after1", time.Time{}) // a later live message still arrives
	waitfor.True(t, 10*time.Second, "after1", func() bool { return d.Ledger().Times("after1") == 1 })
	if n := d.Ledger().Times("race1"); n != 1 {
		t.Errorf("race1 received %d times, want once", n)
	}
}
