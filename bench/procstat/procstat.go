//go:build unix

// Package procstat reads this process's resource use for benchmarks that report a cost per
// operation next to their rate: CPU time is steadier than wall time on a shared machine.
package procstat

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/procmon"
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

// Syscalls is this process's read and write system calls so far (syscr and syscw of
// /proc/self/io, Linux only: a call that found nothing to read counts too); ok is false where
// they cannot be read.
func Syscalls() (reads, writes int64, ok bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0, false
	}
	reads, writes, err = procmon.ParseIO(b)
	return reads, writes, err == nil
}
