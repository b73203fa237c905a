package main

import "strings"

// hugePagesTunable asks glibc's malloc (2.35 and later) to madvise(MADV_HUGEPAGE) what it maps,
// so that on a kernel whose transparent huge pages are "madvise" (Debian's and Ubuntu's
// default) Pebble's memtable arenas and block cache, which it allocates with C's calloc in a
// cgo build, are backed by 2 MiB pages. Their skiplist walks then miss the TLB far less:
// 0.90–0.93× the CPU per installation upsert (docs/decisions.md, "Huge pages for Pebble's
// memory").
const hugePagesTunable = "glibc.malloc.hugetlb=1"

// hugePagesEnv returns environ with the tunable added to GLIBC_TUNABLES, and whether pushd
// command cmd should be executed again with it: glibc reads its tunables only as a process
// starts. It is false for commands that hold no store open (only serve and import do), when
// PUSHD_HUGE_PAGES is off (or false, 0), and when GLIBC_TUNABLES already names
// glibc.malloc.hugetlb, with any value: set by the operator, or by the execution before.
func hugePagesEnv(cmd string, environ []string) ([]string, bool) {
	if cmd != "serve" && cmd != "import" {
		return nil, false
	}
	at, tunables := -1, ""
	for i, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PUSHD_HUGE_PAGES":
			if v == "off" || v == "false" || v == "0" {
				return nil, false
			}
		case "GLIBC_TUNABLES":
			if strings.Contains(v, "glibc.malloc.hugetlb=") {
				return nil, false
			}
			at, tunables = i, v
		}
	}
	env := append([]string(nil), environ...)
	if at < 0 {
		return append(env, "GLIBC_TUNABLES="+hugePagesTunable), true
	}
	if tunables != "" {
		tunables += ":"
	}
	env[at] = "GLIBC_TUNABLES=" + tunables + hugePagesTunable
	return env, true
}
