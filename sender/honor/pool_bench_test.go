//go:build unix

package honor_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/honor"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderHonorPool measures deliveries/s through one sender pool to the local Honor
// simulator: OAuth2-authorized requests of up to 1000 tokens, batched by group commit from
// the pool's workers, with Honor's default per-app rate (3,000/s) lifted. cpu-µs/delivery is
// the whole process's CPU (pushd's side and the simulator's together, both in this process)
// per delivery. Run with e.g. -benchtime=40000x.
func BenchmarkSenderHonorPool(b *testing.B) {
	s, err := sim.NewHonor(sim.HonorConfig{NoTokenStats: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	id, secret := s.NewApp("104455667")
	raw, _ := json.Marshal(map[string]honor.ProfileJSON{push.DefaultProfile: {AppID: "104455667", ClientID: id, ClientSecret: secret}})
	app := push.App{ID: "bench", Credentials: map[string]json.RawMessage{push.ChannelHonor: raw}}
	d := sender.New(sender.Config{
		Rates: map[string]float64{push.ChannelHonor: 0},
		Honor: honor.Config{Endpoint: s.URL(), TokenURL: s.TokenURL(), TLS: s.ClientTLS()},
	}, sendertest.Apps{App: app}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelHonor, Body: []byte(`{"title":"Deals","alert":"Half price today","custom":{"id":"42"}}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg, Target: push.Target{ObjectID: "o", Channel: push.ChannelHonor, DeviceID: fmt.Sprintf("AQAAAACy0bench%010d", i)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	st := s.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(float64(st.Accepted)/float64(max(st.Requests, 1)), "tokens/request")
}
