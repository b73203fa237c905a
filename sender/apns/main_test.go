package apns

import (
	"os"
	"testing"

	"github.com/pushd/pushd/sender/sendertest"
)

// TestMain lets the test binary serve as the simulator's child process (sendertest.StartSim).
func TestMain(m *testing.M) {
	if code, child := sendertest.ServeSimChild(); child {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
