package apns

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/pushd/pushd/sender/sendertest"
)

// testTransport is the transport simConfig gives every client of this package's tests.
var testTransport = TransportAPNs2

// TestMain runs every test of the package once per transport, so the client tests are the
// contract both transports meet. Benchmarks pick their transport themselves and run once.
func TestMain(m *testing.M) {
	if code, child := sendertest.ServeSimChild(); child {
		os.Exit(code)
	}
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	for _, tr := range []string{TransportAPNs2, TransportLean} {
		testTransport = tr
		if code := m.Run(); code != 0 {
			fmt.Fprintf(os.Stderr, "apns tests failed on transport %s\n", tr)
			os.Exit(code)
		}
	}
	os.Exit(0)
}
