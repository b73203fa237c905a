//go:build unix

package sendertest_test

import (
	"context"
	"os"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/honor"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/sendertest"
	"github.com/pushd/pushd/sender/vivo"
)

// TestStartSimEveryChannel starts each simulator the pool benchmarks use in a child process
// and sends one delivery to it through a real dispatcher with the credentials it handed back:
// the simulator is served by another process, accepts what the sender sends, and reports it.
func TestStartSimEveryChannel(t *testing.T) {
	// A device id of each channel's format, as the pool benchmarks send.
	devices := map[string]string{
		push.ChannelAPNs:  "00000000000000000000000000000000000000000000000000000000000000a1",
		push.ChannelHMS:   "IQAAAACy0bench000000001",
		push.ChannelMi:    "fakeRegIdBench000000001",
		push.ChannelHonor: "AQAAAACy0bench0000000001",
		push.ChannelMz:    "RFAKEmz0000000001",
		push.ChannelOppo:  "CN_078ad8b8a137cadb14ae5b70000000001",
		push.ChannelVivo:  "15638535410301000000001",
	}
	for _, ch := range sim.NamedChannels {
		t.Run(ch, func(t *testing.T) {
			s := sendertest.StartSim(t, ch)
			if s.Pid == os.Getpid() || s.Pid <= 0 {
				t.Fatalf("simulator %s served by pid %d, this test is pid %d: want a child process", ch, s.Pid, os.Getpid())
			}
			d := sender.New(sender.Config{
				APNs:  apns.Config{ProdEndpoint: s.URL, DevEndpoint: s.URL, TLS: s.TLS},
				HMS:   hms.Config{TLS: s.TLS},
				Mi:    mi.Config{TLS: s.TLS},
				Honor: honor.Config{TLS: s.TLS},
				Mz:    mz.Config{TLS: s.TLS},
				Oppo:  oppo.Config{TLS: s.TLS},
				Vivo:  vivo.Config{TLS: s.TLS},
			}, sendertest.Apps{App: s.App("app1")}, nil, zap.NewNop(), metrics.NewSet())
			defer d.Close()
			msg := &push.Message{Channel: ch, Body: []byte(`{"alert":"hi","title":"t"}`)}
			if ch == push.ChannelAPNs {
				msg = &push.Message{Channel: ch, Body: []byte(`{"aps":{"alert":"hi"}}`), PushType: "alert", Priority: 10}
			}
			ds := []push.Delivery{{AppID: "app1", Prod: true, Message: msg,
				Target: push.Target{ObjectID: "o1", Channel: ch, DeviceID: devices[ch]}}}
			res := make([]push.Result, 1)
			if err := d.Send(context.Background(), ds, res); err != nil {
				t.Fatal(err)
			}
			if res[0].Outcome != push.OutcomeSent {
				t.Fatalf("delivery to simulator %s: %+v", ch, res[0])
			}
			if st := s.Stats(t); st.Requests != 1 || st.Accepted != 1 {
				t.Fatalf("simulator %s stats: %d requests, %d accepted; want 1 and 1", ch, st.Requests, st.Accepted)
			}
		})
	}
}

// TestStartNamedUnknownChannel: a channel without a simulator is refused by name.
func TestStartNamedUnknownChannel(t *testing.T) {
	if n, err := sim.StartNamed("nokia"); err == nil {
		_ = n.Close()
		t.Fatal("StartNamed(nokia): no error")
	}
}
