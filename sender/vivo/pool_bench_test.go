//go:build unix

package vivo_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/sendertest"
	"github.com/pushd/pushd/sender/vivo"
)

// BenchmarkSenderVivoPool measures deliveries/s through one sender pool to the local
// Vivo simulator (batched requests of one rendered message, as a fan-out sends them) and
// the CPU per delivery of the process, simulator included. The default per-app rate is lifted
// to measure the sender, not the pacing. Run with e.g. -benchtime=40000x.
func BenchmarkSenderVivoPool(b *testing.B) {
	s, err := sim.NewVivo(sim.VivoConfig{NoTokenStats: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	key, secret := s.NewApp("10004")
	raw, _ := json.Marshal(map[string]vivo.ProfileJSON{"_default": {AppID: "10004", AppKey: key, AppSecret: secret}})
	app := push.App{ID: "bench", Credentials: map[string]json.RawMessage{push.ChannelVivo: raw}}
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelVivo: 0},
		Vivo:  vivo.Config{Endpoint: s.URL(), TLS: s.ClientTLS()},
	}, sendertest.Apps{App: app}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelVivo, Body: []byte(`{"alert":"hi","title":"t"}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelVivo, DeviceID: fmt.Sprintf("15638535410301%09d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
}
