package fcm

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as the benchmarks' simulator child (serveBenchSim).
func TestMain(m *testing.M) {
	if os.Getenv(benchSimEnv) != "" {
		os.Exit(serveBenchSim())
	}
	os.Exit(m.Run())
}
