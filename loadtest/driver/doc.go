// Package driver owns the load-test scenario driver and its report: it drives a running pushd
// over its REST API (admin API, installations, pushes, push records) against the gateway
// simulators of loadtest/sim, and proves delivery per target: every targeted device token is
// accepted by the right simulator exactly once per scenario, no other token is, and the push
// records count what the simulators saw.
//
// The pure parts (population generation, expectations, verification, the report) hold no
// I/O and are tested with fakes; Run does the I/O. Concurrency: Run seeds installations with a
// bounded set of workers it starts and waits for; nothing else runs concurrently, and no
// exported value is shared between goroutines.
package driver
