package e2e

import "os"

// The gateway role listens on :8090 by default: the pushd processes the tests start (they
// inherit this environment) take a free port instead; the router tells devices which.
func init() { _ = os.Setenv("PUSHD_GATEWAY_ADDR", "127.0.0.1:0") }
