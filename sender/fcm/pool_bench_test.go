//go:build unix

package fcm_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/fcm"
	"github.com/pushd/pushd/sender/sendertest"
)

// BenchmarkSenderFCMPool measures deliveries/s and the sender's CPU per delivery through one
// sender pool (OAuth2 access token, real TLS) to the FCM simulator, which runs in a child
// process so that this process's CPU is the sender's alone. Run with e.g. -benchtime=40000x.
func BenchmarkSenderFCMPool(b *testing.B) {

	simURL, simTLS, sa := startSimProcess(b)
	app := push.App{ID: "bench", Credentials: map[string]json.RawMessage{"fcm": sa}}
	d := sender.New(sender.Config{
		FCM: fcm.Config{Endpoint: simURL, TLS: simTLS},
	}, sendertest.Apps{App: app}, nil, zap.NewNop(), metrics.NewSet())
	defer d.Close()
	msg := &push.Message{Channel: push.ChannelFCM,
		Body: []byte(`{"notification":{"title":"Ana","body":"hi"},"android":{"priority":"HIGH","ttl":"3600s"}}`)}
	ds := make([]push.Delivery, b.N)
	for i := range ds {
		ds[i] = push.Delivery{AppID: "bench", Message: msg,
			Target: push.Target{ObjectID: "o", Channel: push.ChannelFCM, DeviceType: "android", DeviceID: fmt.Sprintf("reg:APA91b%012d", i+1)}}
	}
	elapsed, cpu := sendertest.Drive(b, d, ds)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(cpu, "cpu-µs/delivery")
}

// startSimProcess runs the FCM simulator in a child process (this test binary, see
// serveBenchSim) and returns its URL, client TLS and a service account it trusts.
func startSimProcess(b *testing.B) (url string, tlsCfg *tls.Config, sa []byte) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PUSHD_BENCH_FCM_SIM=1")
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
	var info struct{ URL, CA, SA string }
	if err := json.NewDecoder(stdout).Decode(&info); err != nil {
		b.Fatalf("cannot read the simulator process's address: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(info.CA)) {
		b.Fatal("simulator CA: no certificate")
	}
	return info.URL, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, []byte(info.SA)
}
