//go:build linux && cgo

package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The child (this test binary, told by PUSHD_TEST_HUGEPAGES to act) calls execWithHugePages as
// main does for serve: it must come back executed again, from the start of this test, with its
// own arguments and environment and the tunable added, exactly once.
func TestExecWithHugePagesExecutesOnce(t *testing.T) {
	if os.Getenv("PUSHD_TEST_HUGEPAGES") == "child" {
		// os.Args as a test sets it: the execution must not take its arguments from here.
		os.Args = []string{"pushd", "serve", "--addr", "127.0.0.1:1"}
		execWithHugePages("serve")
		os.Stdout.WriteString("tunables=" + os.Getenv("GLIBC_TUNABLES") + " keep=" + os.Getenv("PUSHD_TEST_KEEP") + "\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecWithHugePagesExecutesOnce$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PUSHD_TEST_HUGEPAGES=child", "PUSHD_TEST_KEEP=yes",
		"GLIBC_TUNABLES=glibc.malloc.arena_max=4")
	cmd.Env = slicesWithout(cmd.Env, "PUSHD_HUGE_PAGES")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	want := "tunables=glibc.malloc.arena_max=4:glibc.malloc.hugetlb=1 keep=yes\n"
	if string(out) != want {
		t.Fatalf("child printed %q, want %q (once: a second execution would add nothing, a missing one shows the old tunables)", out, want)
	}

	// Turned off, the process goes on as it started.
	cmd = exec.Command(os.Args[0], "-test.run=^TestExecWithHugePagesExecutesOnce$", "-test.count=1")
	cmd.Env = append(slicesWithout(os.Environ(), "GLIBC_TUNABLES"), "PUSHD_TEST_HUGEPAGES=child", "PUSHD_HUGE_PAGES=off")
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if string(out) != "tunables= keep=\n" {
		t.Fatalf("child with PUSHD_HUGE_PAGES=off printed %q, want no tunables", out)
	}
}

// slicesWithout returns a copy of environ without the variable name.
func slicesWithout(environ []string, name string) []string {
	return slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}
