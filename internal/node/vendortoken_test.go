package node

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
)

// Under vendor_first, HMS (the simulator, over real HTTP) answers a hybrid installation's
// registrationId dead: the message falls back to the own channel and reaches the device over a
// real WebSocket, and the installation stays, losing only its dead token, so that it is an
// own-channel installation from then on (the dead-token cleanup used to delete it, leaving the
// fallback message cached for an installation that no longer existed). The same DROP under the
// vendor policy still deletes the installation.
func TestVendorFirstDeadTokenKeepsTheInstallationOnTheOwnChannel(t *testing.T) {
	ctx := context.Background()
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	hs, err := sim.NewHMS(sim.HMSConfig{Record: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Close() })
	creds, _ := json.Marshal(map[string]hms.ProfileJSON{push.DefaultProfile: {AppID: "1000", AppSecret: hs.NewApp("1000")}})
	now := time.Now().UTC().Truncate(time.Millisecond)
	app := push.App{ID: "app1", Name: "vf", AppKey: "key1", MasterKey: "master", Settings: push.DefaultSettings(),
		Credentials: map[string]json.RawMessage{push.ChannelHMS: creds}, CreatedAt: now, UpdatedAt: now}
	app.Settings.ChannelPolicy = push.PolicyVendorFirst
	if err := st.CreateApp(ctx, app); err != nil {
		t.Fatal(err)
	}
	hybrid := func(iid string) {
		t.Helper()
		rt := push.Route{ObjectID: "o-" + iid, DeviceType: push.DeviceAndroid, InstallationID: iid, Vendor: "HMS",
			RegistrationID: "reg-" + iid, Channels: []string{"news"}, UpdatedAt: now.Add(-time.Hour).UnixMilli()}
		doc, _ := json.Marshal(map[string]any{"objectId": rt.ObjectID, "deviceType": rt.DeviceType, "installationId": iid,
			"vendor": "HMS", "registrationId": rt.RegistrationID, "channels": rt.Channels})
		if err := st.PutInstallation(ctx, app.ID, app.Settings.Buckets, push.Installation{Route: rt, CreatedAt: rt.UpdatedAt, Doc: doc}); err != nil {
			t.Fatal(err)
		}
		hs.MarkInvalid(rt.RegistrationID)
	}
	hybrid("vf1")
	hybrid("vv1")
	rec := push.Notification{ObjectID: "p1", AppID: app.ID, NotificationID: "nidp1", JobID: "job-p1", Status: push.StatusInProcess,
		CreatedAt: now, UpdatedAt: now, Kind: push.JobQuery, Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}
	if err := st.CreateNotification(ctx, rec); err != nil {
		t.Fatal(err)
	}

	// The gateway role: a real WebSocket server and a simulated device of vf1 connected to it.
	set := metrics.NewSet()
	cfg := direct.Config{Addr: "127.0.0.1:0"}
	core := direct.NewCore(cfg, st, zap.NewNop(), set)
	srv := direct.NewServer(cfg, core, st, st, zap.NewNop(), set)
	sctx, stop := context.WithCancel(ctx)
	if err := srv.Start(sctx); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Run(sctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("gateway Run: %v", err)
		}
	})
	ledger := sim.NewLedger()
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	dev, _, err := sim.DialDeviceAt(dctx, "ws://"+srv.Addr().String()+"/1.1/connect",
		sim.DeviceConfig{AppID: app.ID, AppKey: app.AppKey, InstallationID: "vf1", Ledger: ledger})
	dcancel()
	if err != nil {
		t.Fatalf("dial vf1: %v", err)
	}
	t.Cleanup(dev.Close)

	// The fan-out side: the real dispatcher (HMS sender) with the real invalidator, behind the
	// own channel's handoff.
	d := sender.New(sender.Config{Workers: 2, IdleTimeout: time.Minute, HMS: hms.Config{Endpoint: hs.URL(), TokenURL: hs.TokenURL(), TLS: hs.ClientTLS()}},
		st, invalidator{st}, zap.NewNop(), metrics.NewSet())
	t.Cleanup(d.Close)
	lg, err := embedded.Open(st.DB(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lg.Close() })
	h := direct.NewHandoff(d, lg)
	vendorMsg := &push.Message{Channel: push.ChannelHMS, Body: []byte(`{"alert":"hi","title":"t"}`), Expiration: now.Add(time.Hour)}
	ownMsg := &push.Message{Channel: push.ChannelDirect, Body: []byte(`{"alert":"hi"}`), Expiration: now.Add(time.Hour)}
	delivery := func(iid string, fallback *push.Message) push.Delivery {
		return push.Delivery{AppID: app.ID, NotificationObjectID: "p1", NotificationID: "nidp1", Message: vendorMsg, Fallback: fallback,
			Target: push.Target{ObjectID: "o-" + iid, Channel: push.ChannelHMS, DeviceType: push.DeviceAndroid, DeviceID: "reg-" + iid, InstallationID: iid}}
	}
	ds := []push.Delivery{delivery("vf1", ownMsg), delivery("vv1", nil)}
	res := make([]push.Result, len(ds))
	if err := h.Send(ctx, ds, res); err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != push.OutcomeQueued || res[0].Channel != push.ChannelDirect {
		t.Fatalf("vendor_first target with a dead token: %+v, want queued on the own channel", res[0])
	}
	if res[1].Outcome != push.OutcomeInvalidToken || res[1].Channel != "" {
		t.Fatalf("vendor-policy target with a dead token: %+v, want an invalid token", res[1])
	}

	cctx, ccancel := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() { consumed <- lg.Consume(cctx, queue.TopicDirect, queue.GroupGateway, core.Handle) }()
	waitfor.True(t, 30*time.Second, "the fallen-back push on the device", func() bool { return ledger.Acked("p1") })
	ccancel()
	if err := <-consumed; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if n := ledger.Times("p1"); n != 1 {
		t.Errorf("device got the push %d times, want once", n)
	}

	// vf1 stays, an own-channel installation without its dead token.
	inst, err := st.GetInstallation(ctx, app.ID, "o-vf1")
	if err != nil {
		t.Fatalf("the vendor_first installation after its dead token: %v; want it kept", err)
	}
	if inst.RegistrationID != "" || inst.InstallationID != "vf1" || inst.Vendor != "HMS" || len(inst.Channels) != 1 {
		t.Errorf("kept installation's route = %+v; want installationId vf1, vendor HMS, its channel, no registrationId", inst.Route)
	}
	if ch := inst.DeliveryChannel(push.Edition("")); ch != push.ChannelDirect {
		t.Errorf("kept installation's delivery channel = %q, want %q", ch, push.ChannelDirect)
	}
	if strings.Contains(string(inst.Doc), "registrationId") || !strings.Contains(string(inst.Doc), `"installationId":"vf1"`) {
		t.Errorf("kept installation's document = %s; want it without registrationId", inst.Doc)
	}
	if _, err := st.LookupDevice(ctx, app.ID, push.KindRegID, "reg-vf1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the dead registrationId still indexed: %v", err)
	}
	if oid, err := st.LookupDevice(ctx, app.ID, push.KindIID, "vf1"); err != nil || oid != "o-vf1" {
		t.Errorf("installationId vf1 indexed to %q, %v; want o-vf1", oid, err)
	}
	if _, err := st.DeadToken(ctx, app.ID, "reg-vf1"); err != nil {
		t.Errorf("the dead registrationId is not remembered: %v", err)
	}
	// vv1 (no fallback: the vendor policy) is deleted as before.
	if _, err := st.GetInstallation(ctx, app.ID, "o-vv1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the vendor-policy installation after its dead token: %v; want it deleted", err)
	}
}
