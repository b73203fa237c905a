package fcm

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// testTransport is the transport every client of this package's tests is built with.
var testTransport = TransportStd

// TestMain runs every test of the package once per transport, so the client tests are the
// contract both transports meet. Benchmarks pick their transport themselves and run once.
func TestMain(m *testing.M) {
	if os.Getenv(benchSimEnv) != "" {
		os.Exit(serveBenchSim())
	}
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	for _, tr := range []string{TransportStd, TransportLean} {
		testTransport = tr
		if code := m.Run(); code != 0 {
			fmt.Fprintf(os.Stderr, "fcm tests failed on transport %s\n", tr)
			os.Exit(code)
		}
	}
	os.Exit(0)
}
