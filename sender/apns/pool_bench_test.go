//go:build unix

package apns_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
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
// connections, token auth) on each transport (sub-benchmarks apns2 and lean) to the APNs
// simulator, next to the raw ceiling sim.Ceiling reaches against the same simulator in the
// same run (one connection, 256 streams, bare x/net/http2). The simulator runs in a child
// process, so cpu-µs/delivery is the sender's own CPU (and ceiling-cpu-µs/req the bare
// client's). Run with e.g. -benchtime=40000x.
func BenchmarkSenderAPNsPool(b *testing.B) {
	for _, tr := range []string{apns.TransportAPNs2, apns.TransportLean} {
		b.Run(tr, func(b *testing.B) { benchAPNsPool(b, tr) })
	}
}

// startSimProcess runs the APNs simulator in a child process (this test binary, see
// serveBenchSim) and returns its URL, client TLS and the P8 key it trusts.
func startSimProcess(b *testing.B) (url string, tlsCfg *tls.Config, p8 []byte) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PUSHD_BENCH_APNS_SIM=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	var info struct{ URL, CA, P8 string }
	if err := json.NewDecoder(stdout).Decode(&info); err != nil {
		b.Fatalf("cannot read the simulator process's address: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(info.CA)) {
		b.Fatal("simulator CA: no certificate")
	}
	return info.URL, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}, []byte(info.P8)
}

func benchAPNsPool(b *testing.B, transport string) {
	simURL, simTLS, p8 := startSimProcess(b)
	raw, _ := json.Marshal(apns.CredentialsJSON{DefaultTopic: "com.example.chat", Teams: []apns.TeamKey{{TeamID: "TEAM123456", KeyID: "KEY1234567", P8: string(p8)}}})
	app := push.App{ID: "bench", Credentials: map[string]json.RawMessage{"apns": raw}}

	key, err := sim.ParseAPNsKey(p8)
	if err != nil {
		b.Fatal(err)
	}
	jwt, err := sim.NewAPNsToken(key, "KEY1234567", "TEAM123456", time.Now())
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
		APNs: apns.Config{ProdEndpoint: simURL, DevEndpoint: simURL, TLS: simTLS, Transport: transport},
	}, sendertest.Apps{App: app}, nil, zap.NewNop(), metrics.NewSet())
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
