package main

import "os"

// The gateway role listens on :8090 by default: tests that serve all roles, run in parallel
// with other test processes, take a free port instead.
func init() { _ = os.Setenv("PUSHD_GATEWAY_ADDR", "127.0.0.1:0") }
