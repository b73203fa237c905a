package apns

import (
	"encoding/json"
	"io"
	"os"

	"github.com/pushd/pushd/loadtest/sim"
)

// benchSimEnv makes the test binary serve the APNs simulator instead of running tests:
// BenchmarkSenderAPNsPool starts it as a child process so that the benchmark process's CPU
// is the sender's alone.
const benchSimEnv = "PUSHD_BENCH_APNS_SIM"

// serveBenchSim starts the simulator, writes {"url","ca","p8"} as one JSON line to stdout and
// serves until stdin closes.
func serveBenchSim() int {
	s, err := sim.NewAPNs(sim.APNsConfig{NoTokenStats: true})
	if err != nil {
		return 1
	}
	defer s.Close()
	p8, err := s.NewKey("KEY1234567", "TEAM123456")
	if err != nil {
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{"url": s.URL(), "ca": string(s.CertPEM()), "p8": string(p8)}); err != nil {
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}
