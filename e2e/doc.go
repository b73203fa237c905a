// Package e2e owns the process-level tests of pushd: they build the real `pushd` and `pushsim`
// binaries once per test run, start them as separate processes on 127.0.0.1, talk to them only
// over HTTP (the REST API, the simulators' /_stats) and signals (SIGKILL, SIGTERM), and check
// the delivery semantics of DESIGN.md end to end: an accepted push reaches every target at
// least once across crashes, with duplicates bounded by the checkpoint interval, and exact
// counts on its record.
//
// The package has no non-test code. Its tests skip under -short. Each test owns its
// processes: it starts them, and kills any still running when it ends.
package e2e
