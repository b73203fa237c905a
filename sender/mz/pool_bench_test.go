//go:build unix

package mz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/bench/procstat"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/mz"
)

type benchApps struct{ app push.App }

func (a benchApps) GetApp(context.Context, string) (push.App, error) { return a.app, nil }

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
	d := sender.New(sender.Config{Mz: mz.Config{Endpoint: s.URL(), TLS: s.ClientTLS()}}, benchApps{app}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelMz, Body: []byte(`{"title":"Deals","alert":"Half price today","custom":{"id":"42"}}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg, Target: push.Target{ObjectID: "o", Channel: push.ChannelMz, DeviceID: fmt.Sprintf("RFAKEmz%010d", i)}}
	}
	res := make([]push.Result, b.N)
	if err := d.Send(context.Background(), ds[:1], res[:1]); err != nil || res[0].Outcome != push.OutcomeSent {
		b.Fatalf("warm-up: %v %+v", err, res[0])
	}

	const batch, senders = 500, 4 // like fan-out: a few workers each sending batches
	var next, failed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := procstat.CPU(b)
	start := time.Now()
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(batch)) - batch
				if lo >= b.N {
					return
				}
				hi := min(lo+batch, b.N)
				if err := d.Send(context.Background(), ds[lo:hi], res[lo:hi]); err != nil {
					b.Error(err)
					return
				}
				for _, r := range res[lo:hi] {
					if r.Outcome != push.OutcomeSent {
						failed.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := float64((procstat.CPU(b) - cpu0).Microseconds()) / float64(b.N)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d deliveries not sent", n)
	}
	st := s.Stats()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(float64(st.Accepted)/float64(max(st.Requests, 1)), "pushIds/request")
}
