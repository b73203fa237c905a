//go:build unix

package oppo_test

import (
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderOppoPool measures deliveries/s through one sender pool to the OPPO
// simulator: batched requests of one rendered message under a cached auth token, as a
// fan-out sends them, with the vendor's default per-app rate lifted to measure the
// sender, not the pacing. The simulator runs in a child process (sendertest.StartSim), so
// cpu-µs/delivery is pushd's own CPU per delivery. Run with e.g. -benchtime=40000x.
func BenchmarkSenderOppoPool(b *testing.B) {
	s := sendertest.StartSim(b, push.ChannelOppo)
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelOppo: 0},
		Oppo:  oppo.Config{TLS: s.TLS},
	}, sendertest.Apps{App: s.App("bench")}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelOppo, Body: []byte(`{"alert":"hi","title":"t","notificationChannel":"c"}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelOppo, DeviceID: fmt.Sprintf("CN_078ad8b8a137cadb14ae5b70%09d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	st := s.Stats(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(float64(st.Accepted)/float64(max(st.Requests, 1)), "tokens/request")
}
