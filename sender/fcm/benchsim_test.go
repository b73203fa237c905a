package fcm

import (
	"encoding/json"
	"io"
	"os"

	"github.com/pushd/pushd/loadtest/sim"
)

// benchSimEnv makes the test binary serve the FCM simulator instead of running tests:
// BenchmarkSenderFCMPool starts it as a child process so that the benchmark process's CPU is
// the sender's alone.
const benchSimEnv = "PUSHD_BENCH_FCM_SIM"

// serveBenchSim starts the simulator, writes {"url","ca","sa"} as one JSON line to stdout
// (sa: a service account it trusts) and serves until stdin closes.
func serveBenchSim() int {
	s, err := sim.NewFCM(sim.FCMConfig{NoTokenStats: true})
	if err != nil {
		return 1
	}
	defer s.Close()
	sa, err := s.NewServiceAccount("bench-project")
	if err != nil {
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{"url": s.URL(), "ca": string(s.CertPEM()), "sa": string(sa)}); err != nil {
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}
