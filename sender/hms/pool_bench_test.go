//go:build unix

package hms_test

import (
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderHMSPool measures deliveries/s through one sender pool to the HMS
// simulator: OAuth2-authorized batched requests of ≤ 1000 tokens of one rendered message, as
// a fan-out sends them, with the vendor's default per-app rate lifted to measure the
// sender, not the pacing. The simulator runs in a child process (sendertest.StartSim), so
// cpu-µs/delivery is pushd's own CPU per delivery. Run with e.g. -benchtime=40000x.
func BenchmarkSenderHMSPool(b *testing.B) {
	s := sendertest.StartSim(b, push.ChannelHMS)
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelHMS: 0},
		HMS:   hms.Config{TLS: s.TLS},
	}, sendertest.Apps{App: s.App("bench")}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelHMS, Body: []byte(`{"alert":"hi","title":"t"}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelHMS, DeviceID: fmt.Sprintf("IQAAAACy0bench%09d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	st := s.Stats(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(float64(st.Accepted)/float64(max(st.Requests, 1)), "tokens/request")
}
