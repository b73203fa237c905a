//go:build linux

package direct_test

import "github.com/pushd/pushd/sender/direct"

// readLoops are the read loops the connection tests and benchmarks cover.
var readLoops = []string{direct.ReadLoopEpoll, direct.ReadLoopGoroutine}
