//go:build unix

package mz_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderMzPool measures deliveries/s through one sender pool to the local Meizu
// simulator: signed requests of up to 100 pushIds, batched by group commit from the pool's
// workers. cpu-µs/delivery is the whole process's CPU (pushd's side and the simulator's
// together, both in this process) per delivery. Run with e.g. -benchtime=40000x.
func BenchmarkSenderMzPool(b *testing.B) {
	s, err := sim.NewMz(sim.MzConfig{NoTokenStats: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	appID, secret := s.NewApp()
	raw, _ := json.Marshal(map[string]mz.ProfileJSON{push.DefaultProfile: {AppID: json.Number(appID), AppSecret: secret}})
	app := push.App{ID: "bench", Credentials: map[string]json.RawMessage{push.ChannelMz: raw}}
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelMz: 0}, // measure the sender, not Meizu's default 200/s pacing
		Mz:    mz.Config{Endpoint: s.URL(), TLS: s.ClientTLS()},
	}, sendertest.Apps{App: app}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelMz, Body: []byte(`{"title":"Deals","alert":"Half price today","custom":{"id":"42"}}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg, Target: push.Target{ObjectID: "o", Channel: push.ChannelMz, DeviceID: fmt.Sprintf("RFAKEmz%010d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	st := s.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(float64(st.Accepted)/float64(max(st.Requests, 1)), "pushIds/request")
}
