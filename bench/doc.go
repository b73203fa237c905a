// Package bench holds the cross-package benchmarks of the hot paths (fan-out scan+filter, the
// planner→worker pipeline to a no-op sender, raw Pebble scans of the same rows) so that
// `make bench` prints their rates side by side. It has no non-test code beyond this comment;
// the benchmarks own their data (a Pebble directory seeded once per run).
package bench
