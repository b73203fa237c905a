//go:build unix

package oppo_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderOppoPool measures deliveries/s through one sender pool to the local
// Oppo simulator (batched requests of one rendered message, as a fan-out sends them) and
// the CPU per delivery of the process, simulator included. The default per-app rate is lifted
// to measure the sender, not the pacing. Run with e.g. -benchtime=40000x.
func BenchmarkSenderOppoPool(b *testing.B) {
	s, err := sim.NewOppo(sim.OppoConfig{NoTokenStats: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	key, secret := s.NewApp()
	raw, _ := json.Marshal(map[string]oppo.ProfileJSON{"_default": {AppKey: key, MasterSecret: secret}})
	app := push.App{ID: "bench", Credentials: map[string]json.RawMessage{push.ChannelOppo: raw}}
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelOppo: 0},
		Oppo:  oppo.Config{Endpoint: s.URL(), IntlEndpoint: s.URL(), TLS: s.ClientTLS()},
	}, sendertest.Apps{App: app}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelOppo, Body: []byte(`{"alert":"hi","title":"t","notificationChannel":"c"}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelOppo, DeviceID: fmt.Sprintf("CN_078ad8b8a137cadb14ae5b70%09d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
}
