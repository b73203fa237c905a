//go:build unix

package sendertest_test

import (
	"os"
	"testing"

	"github.com/pushd/pushd/sender/sendertest"
)

// TestMain lets StartSim re-execute this test binary as a simulator process.
func TestMain(m *testing.M) {
	if code, child := sendertest.ServeSimChild(); child {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
