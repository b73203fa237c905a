//go:build unix

package hms_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderHMSPool measures deliveries/s through one sender pool to the local HMS
// simulator (batched requests of ≤ 1000 tokens of one rendered message, as a fan-out sends
// them) and the CPU per delivery of the process, simulator included. Run with e.g.
// -benchtime=40000x.
func BenchmarkSenderHMSPool(b *testing.B) {
	s, err := sim.NewHMS(sim.HMSConfig{NoTokenStats: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	raw, _ := json.Marshal(map[string]hms.ProfileJSON{"_default": {AppID: "104455667", AppSecret: s.NewApp("104455667")}})
	app := push.App{ID: "bench", Credentials: map[string]json.RawMessage{push.ChannelHMS: raw}}
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelHMS: 0},
		HMS:   hms.Config{Endpoint: s.URL(), TokenURL: s.TokenURL(), TLS: s.ClientTLS()},
	}, sendertest.Apps{App: app}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelHMS, Body: []byte(`{"alert":"hi","title":"t"}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelHMS, DeviceID: fmt.Sprintf("IQAAAACy0bench%09d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
}
