//go:build unix

package mi_test

import (
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderMiPool measures deliveries/s through one sender pool to the Xiaomi
// simulator: batched requests of ≤ 1000 comma-joined regIds of one rendered message, as a
// fan-out sends them, with the vendor's default per-app rate lifted to measure the
// sender, not the pacing. The simulator runs in a child process (sendertest.StartSim), so
// cpu-µs/delivery is pushd's own CPU per delivery. Run with e.g. -benchtime=40000x.
func BenchmarkSenderMiPool(b *testing.B) {
	s := sendertest.StartSim(b, push.ChannelMi)
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelMi: 0},
		Mi:    mi.Config{TLS: s.TLS},
	}, sendertest.Apps{App: s.App("bench")}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelMi, Body: []byte(`{"alert":"hi","title":"t"}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelMi, DeviceID: fmt.Sprintf("fakeRegIdBench%09d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	st := s.Stats(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(float64(st.Accepted)/float64(max(st.Requests, 1)), "tokens/request")
}
