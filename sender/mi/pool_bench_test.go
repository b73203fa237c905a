//go:build unix

package mi_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderMiPool measures deliveries/s through one sender pool to the local Xiaomi
// simulator (batched requests of ≤ 1000 comma-joined regIds of one rendered message, as a
// fan-out sends them) and the CPU per delivery of the process, simulator included. Run with
// e.g. -benchtime=40000x.
func BenchmarkSenderMiPool(b *testing.B) {
	s, err := sim.NewMi(sim.MiConfig{NoTokenStats: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	raw, _ := json.Marshal(map[string]mi.ProfileJSON{"_default": {AppSecret: s.NewApp("com.example.chat"), PackageName: "com.example.chat"}})
	app := push.App{ID: "bench", Credentials: map[string]json.RawMessage{push.ChannelMi: raw}}
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelMi: 0},
		Mi:    mi.Config{Endpoint: s.URL(), TLS: s.ClientTLS()},
	}, sendertest.Apps{App: app}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelMi, Body: []byte(`{"alert":"hi","title":"t"}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelMi, DeviceID: fmt.Sprintf("fakeRegIdBench%09d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
}
