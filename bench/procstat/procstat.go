//go:build unix

// Package procstat reads this process's resource use for benchmarks that report a cost per
// operation next to their rate: CPU time is steadier than wall time on a shared machine.
package procstat

import (
	"syscall"
	"testing"
	"time"
)

// CPU is this process's user+system CPU time so far.
func CPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
