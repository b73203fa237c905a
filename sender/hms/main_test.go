//go:build unix

package hms_test

import (
	"os"
	"testing"

	"github.com/pushd/pushd/sender/sendertest"
)

// TestMain lets BenchmarkSenderHMSPool re-execute this test binary as its simulator process.
func TestMain(m *testing.M) {
	if code, child := sendertest.ServeSimChild(); child {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
