//go:build unix

// Package poolbench is the pool benchmark every batching vendor sender (hms, mi, mz, vivo,
// oppo, honor) runs against its simulator. It is apart from sendertest because it builds the
// sender dispatcher, which imports the vendor packages whose in-package tests use sendertest.
package poolbench

import (
	"crypto/tls"
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/sendertest"
)

// Pool is what one vendor's pool benchmark (Run) sets apart from another's.
type Pool struct {
	// Channel is the gateway channel, one of sim.NamedChannels.
	Channel string
	// Configure sets the channel's sender config to trust the simulator (tlsCfg).
	Configure func(c *sender.Config, tlsCfg *tls.Config)
	// Body is the rendered message every delivery carries.
	Body string
	// DeviceID is a fmt format of one %d (the delivery's index) giving a valid device token.
	DeviceID string
}

// Run measures deliveries/s through one sender pool to p.Channel's simulator, run in a
// child process (sendertest.StartSim) so that cpu-µs/delivery is pushd's own CPU per delivery: b.N
// deliveries of one message, driven as a fan-out sends them (sendertest.Drive), with the vendor's
// default per-app rate lifted to measure the sender, not the pacing. It reports
// deliveries/s, cpu-µs/delivery, tokens/request (the simulator's accepted tokens per
// request) and allocs.
func Run(b *testing.B, p Pool) {
	b.Helper()
	s := sendertest.StartSim(b, p.Channel)
	cfg := sender.Config{Rates: map[string]float64{p.Channel: 0}}
	p.Configure(&cfg, s.TLS)
	d := sender.New(cfg, sendertest.Apps{App: s.App("bench")}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: p.Channel, Body: []byte(p.Body)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: p.Channel, DeviceID: fmt.Sprintf(p.DeviceID, i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	st := s.Stats(b)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(float64(st.Accepted)/float64(max(st.Requests, 1)), "tokens/request")
}
