//go:build unix

package honor_test

import (
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/honor"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderHonorPool measures deliveries/s through one sender pool to the Honor
// simulator: OAuth2-authorized requests of up to 1000 tokens, batched by group commit from
// the pool's workers, with the vendor's default per-app rate lifted to measure the
// sender, not the pacing. The simulator runs in a child process (sendertest.StartSim), so
// cpu-µs/delivery is pushd's own CPU per delivery. Run with e.g. -benchtime=40000x.
func BenchmarkSenderHonorPool(b *testing.B) {
	s := sendertest.StartSim(b, push.ChannelHonor)
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelHonor: 0},
		Honor: honor.Config{TLS: s.TLS},
	}, sendertest.Apps{App: s.App("bench")}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelHonor, Body: []byte(`{"title":"Deals","alert":"Half price today","custom":{"id":"42"}}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelHonor, DeviceID: fmt.Sprintf("AQAAAACy0bench%010d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	st := s.Stats(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(float64(st.Accepted)/float64(max(st.Requests, 1)), "tokens/request")
}
