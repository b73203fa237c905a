package direct_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/pushd/pushd/sender/sendertest"
)

// noInvalidations counts the dead tokens the dispatcher reports.
type noInvalidations struct{ n *int }

func (n noInvalidations) InvalidateToken(context.Context, string, string, string, time.Time) error {
	*n.n++
	return nil
}

func (n noInvalidations) DropVendorToken(context.Context, string, string, string, time.Time) error {
	*n.n++
	return nil
}

// setPolicy stores the test app's channel policy.
func (r *rig) setPolicy(t *testing.T, policy string) {
	t.Helper()
	app, err := r.st.GetApp(context.Background(), testApp)
	if err != nil {
		t.Fatal(err)
	}
	app.Settings.ChannelPolicy = policy
	if err := r.st.PutApp(context.Background(), app); err != nil {
		t.Fatal(err)
	}
}

// TestDirectHybridAdmittedByPolicy: a hybrid installation (with a vendor) is refused by the
// gateway under the default policy and admitted once the app's policy uses the own channel.
func TestDirectHybridAdmittedByPolicy(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "hyb1", push.DeviceAndroid, "HMS")
	_, _, err := r.dial(t, sim.DeviceConfig{InstallationID: "hyb1"})
	var ref *sim.RefusedError
	if !errors.As(err, &ref) || ref.Code != direct.CloseNotDirect {
		t.Fatalf("hybrid device under the vendor policy: %v; want close code %d", err, direct.CloseNotDirect)
	}
	for _, p := range []string{push.PolicyOwnFirst, push.PolicyVendorFirst, push.PolicyOwnOnly} {
		r.setPolicy(t, p)
		d, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "hyb1"})
		waitfor.True(t, 10*time.Second, "the core to know the device online", func() bool { return r.core.Online(testApp, "hyb1") })
		d.Close()
		waitfor.True(t, 10*time.Second, "the core to know the device offline", func() bool { return !r.core.Online(testApp, "hyb1") })
	}
}

// TestDirectVendorFirstFallsBack: under vendor_first, a target HMS (the simulator, over real
// HTTP) refuses as a dead token falls back to the own channel and reaches its connected
// device over a real WebSocket, counted on the own channel; a target HMS accepts stays on
// HMS; without a fallback (the vendor policy) the refusal is final and nothing is queued.
func TestDirectVendorFirstFallsBack(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.setPolicy(t, push.PolicyVendorFirst)
	r.installation(t, "vf1", push.DeviceAndroid, "HMS")
	r.installation(t, "vf2", push.DeviceAndroid, "HMS")
	r.record(t, "p1")
	hs, err := sim.NewHMS(sim.HMSConfig{Record: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Close() })
	hs.MarkInvalid("reg-vf1")
	creds, _ := json.Marshal(map[string]hms.ProfileJSON{push.DefaultProfile: {AppID: "1000", AppSecret: hs.NewApp("1000")}})
	invalidated := 0
	d := sender.New(sender.Config{Workers: 4, IdleTimeout: time.Minute, HMS: hms.Config{Endpoint: hs.URL(), TokenURL: hs.TokenURL(), TLS: hs.ClientTLS()}},
		sendertest.StoredApps{Store: r.st, Channel: push.ChannelHMS, Creds: creds}, noInvalidations{&invalidated}, zap.NewNop(), metrics.NewSet())
	t.Cleanup(d.Close)
	lg, err := embedded.Open(r.st.DB(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lg.Close() })
	h := direct.NewHandoff(d, lg)

	ledger := sim.NewLedger()
	r.mustDial(t, sim.DeviceConfig{InstallationID: "vf1", Ledger: ledger})
	vendorMsg := &push.Message{Channel: push.ChannelHMS, Body: []byte(`{"alert":"hi","title":"t"}`), Expiration: time.Now().Add(time.Hour)}
	ownMsg := &push.Message{Channel: push.ChannelDirect, Body: []byte(`{"alert":"hi"}`), Expiration: time.Now().Add(time.Hour)}
	delivery := func(iid string, fallback *push.Message) push.Delivery {
		return push.Delivery{AppID: testApp, NotificationObjectID: "p1", NotificationID: "nidp1", Message: vendorMsg, Fallback: fallback,
			Target: push.Target{ObjectID: "o-" + iid, Channel: push.ChannelHMS, DeviceType: push.DeviceAndroid, DeviceID: "reg-" + iid, InstallationID: iid}}
	}
	ds := []push.Delivery{delivery("vf1", ownMsg), delivery("vf2", ownMsg)}
	res := make([]push.Result, len(ds))
	if err := h.Send(context.Background(), ds, res); err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != push.OutcomeQueued || res[0].Channel != push.ChannelDirect {
		t.Errorf("refused target: %+v, want queued on the own channel", res[0])
	}
	if res[1].Outcome != push.OutcomeSent || res[1].Channel != "" {
		t.Errorf("accepted target: %+v, want sent on its vendor", res[1])
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lg.Consume(ctx, queue.TopicDirect, queue.GroupGateway, r.core.Handle) }()
	waitfor.True(t, 10*time.Second, "the fallen-back push to arrive on the own channel", func() bool { return ledger.Acked("p1") })
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if ledger.Times("p1") != 1 {
		t.Errorf("device got the push %d times, want once", ledger.Times("p1"))
	}
	waitfor.True(t, 10*time.Second, "the own channel's counts", func() bool { return r.tally(t, "p1").Equal(push.Tally{Sent: 1, Arrivals: 1}) })

	// The vendor policy (no Fallback): the refusal is final, nothing reaches push.direct.
	ds = []push.Delivery{delivery("vf1", nil)}
	res = res[:1]
	clear(res)
	if err := h.Send(context.Background(), ds, res); err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome == push.OutcomeQueued || res[0].Channel != "" {
		t.Errorf("refused target without a fallback: %+v, want a final vendor outcome", res[0])
	}
}
