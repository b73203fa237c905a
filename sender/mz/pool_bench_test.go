//go:build unix

package mz_test

import (
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderMzPool measures deliveries/s through one sender pool to the Meizu
// simulator: signed requests of up to 100 pushIds, batched by group commit from the pool's
// workers, with the vendor's default per-app rate lifted to measure the
// sender, not the pacing. The simulator runs in a child process (sendertest.StartSim), so
// cpu-µs/delivery is pushd's own CPU per delivery. Run with e.g. -benchtime=40000x.
func BenchmarkSenderMzPool(b *testing.B) {
	s := sendertest.StartSim(b, push.ChannelMz)
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelMz: 0},
		Mz:    mz.Config{TLS: s.TLS},
	}, sendertest.Apps{App: s.App("bench")}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelMz, Body: []byte(`{"title":"Deals","alert":"Half price today","custom":{"id":"42"}}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelMz, DeviceID: fmt.Sprintf("RFAKEmz%010d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	st := s.Stats(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(float64(st.Accepted)/float64(max(st.Requests, 1)), "tokens/request")
}
