//go:build linux && cgo

package main

import (
	"os"
	"strings"
	"syscall"
)

// execWithHugePages executes this process again, with the same arguments (read from
// /proc/self/cmdline, not os.Args, which a test may have set) and the huge-pages tunable added
// to its environment (hugePagesEnv), when cmd wants it. It returns only when it does not: the
// tunable is not wanted, or /proc or the execution failed (pushd then runs without it).
func execWithHugePages(cmd string) {
	env, ok := hugePagesEnv(cmd, os.Environ())
	if !ok {
		return
	}
	raw, err := os.ReadFile("/proc/self/cmdline")
	if err != nil || len(raw) == 0 {
		return
	}
	argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	_ = syscall.Exec("/proc/self/exe", argv, env)
}
