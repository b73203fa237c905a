//go:build unix

package apns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/bench/procstat"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderAPNsPool measures deliveries/s through one sender pool (at most 4 HTTP/2
// connections, token auth) to the APNs simulator, next to the raw ceiling sim.Ceiling reaches against the same simulator in the
// same run (one connection, 256 streams, bare x/net/http2). The simulator runs in a child
// process (sendertest.StartSim), so cpu-µs/delivery is the sender's own CPU (and ceiling-cpu-µs/req the bare
// client's). Run with e.g. -benchtime=40000x.
func BenchmarkSenderAPNsPool(b *testing.B) {
	s := sendertest.StartSim(b, push.ChannelAPNs)
	simURL, simTLS := s.URL, s.TLS
	var creds apns.CredentialsJSON
	if err := json.Unmarshal(s.Credentials, &creds); err != nil || len(creds.Teams) != 1 {
		b.Fatalf("simulator credentials: %v", err)
	}
	team := creds.Teams[0]
	key, err := sim.ParseAPNsKey([]byte(team.P8))
	if err != nil {
		b.Fatal(err)
	}
	jwt, err := sim.NewAPNsToken(key, team.KeyID, team.TeamID, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	// The ceiling is measured before and after the pool run and averaged: on a shared machine
	// the load changes during the run. CPU per request (this process's: the client's) is the
	// steadier comparison.
	ceilingN := max(b.N/2, 10000)
	var ceiling, ceilingCPU float64
	measureCeiling := func() {
		cpu0 := procstat.CPU(b)
		perSec, err := sim.Ceiling(context.Background(), simURL, simTLS.Clone(), "bearer "+jwt, ceilingN, 256)
		if err != nil {
			b.Fatal(err)
		}
		ceiling += perSec / 2
		ceilingCPU += float64((procstat.CPU(b) - cpu0).Microseconds()) / float64(ceilingN) / 2
	}
	measureCeiling()

	d := sender.New(sender.Config{
		APNs: apns.Config{ProdEndpoint: simURL, DevEndpoint: simURL, TLS: simTLS},
	}, sendertest.Apps{App: s.App("bench")}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelAPNs, Body: []byte(`{"aps":{"alert":"hi"}}`), PushType: "alert", Priority: 10}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Prod: true, Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelAPNs, DeviceID: fmt.Sprintf("%064x", i+1)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	measureCeiling()
	perSec := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(perSec, "deliveries/s")
	b.ReportMetric(ceiling, "ceiling-req/s")
	b.ReportMetric(perSec/ceiling, "ratio")
	b.ReportMetric(cpu, "cpu-µs/delivery")
	b.ReportMetric(ceilingCPU, "ceiling-cpu-µs/req")
	b.ReportMetric(ceilingCPU/cpu, "cpu-ratio")
}
