//go:build unix

package sendertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// simEnv names the simulator channel a test binary re-executed by StartSim serves instead of
// running tests (see ServeSimChild).
const simEnv = "PUSHD_BENCH_SIM"

// ServeSimChild makes this test binary a simulator process when StartSim started it: it
// serves the simulator named by the environment, writes its sim.Named as one JSON line to
// stdout and serves until stdin closes. It reports whether this process was such a child and
// the exit code it must end with. Call it first in TestMain:
//
//	if code, child := sendertest.ServeSimChild(); child {
//		os.Exit(code)
//	}
func ServeSimChild() (code int, child bool) {
	channel := os.Getenv(simEnv)
	if channel == "" {
		return 0, false
	}
	n, err := sim.StartNamed(channel)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	defer n.Close()
	if err := json.NewEncoder(os.Stdout).Encode(n); err != nil {
		fmt.Fprintf(os.Stderr, "cannot write the address of simulator %s: %v\n", channel, err)
		return 1, true
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0, true
}

// SimProcess is a simulator running in a child process (StartSim).
type SimProcess struct {
	sim.Named
	// TLS trusts the simulator's certificate and offers h2.
	TLS *tls.Config
}

// StartSim runs the simulator of channel (one of sim.NamedChannels) in a child process, the
// test binary re-executed with simEnv set (its TestMain must call ServeSimChild), so that
// the CPU this process uses is the sender's alone. The child stops when tb's test ends, or
// when this process dies (its stdin closes).
func StartSim(tb testing.TB, channel string) *SimProcess {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), simEnv+"="+channel)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("cannot start simulator process %s: %v", channel, err)
	}
	tb.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	p := &SimProcess{}
	if err := json.NewDecoder(stdout).Decode(&p.Named); err != nil {
		tb.Fatalf("cannot read the address of simulator process %s (does TestMain call sendertest.ServeSimChild?): %v", channel, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(p.CertPEM)) {
		tb.Fatalf("simulator process %s: no certificate", channel)
	}
	p.TLS = &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
	return p
}

// Stats asks the simulator for its counters (GET /_stats?tokens=0).
func (p *SimProcess) Stats(tb testing.TB) sim.Stats {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/_stats?tokens=0", nil)
	if err != nil {
		tb.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: p.TLS.Clone(), ForceAttemptHTTP2: true}}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatalf("cannot read the stats of simulator %s: %v", p.Channel, err)
	}
	defer resp.Body.Close()
	var st sim.Stats
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("cannot read the stats of simulator %s: status %d", p.Channel, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		tb.Fatalf("cannot decode the stats of simulator %s: %v", p.Channel, err)
	}
	return st
}

// App is an app of id whose credentials for the simulator's channel are the simulator's app.
func (p *SimProcess) App(id string) push.App {
	return push.App{ID: id, Credentials: map[string]json.RawMessage{p.Channel: p.Credentials}}
}
