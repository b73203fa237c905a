package main

import (
	"slices"
	"testing"
)

func TestHugePagesEnv(t *testing.T) {
	for _, c := range []struct {
		name    string
		cmd     string
		environ []string
		want    []string // nil: no execution again
	}{
		{"serve adds the tunable", "serve", []string{"HOME=/root"}, []string{"HOME=/root", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}},
		{"import too", "import", nil, []string{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}},
		{"other tunables are kept", "serve", []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2", "A=b"},
			[]string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1", "A=b"}},
		{"an empty GLIBC_TUNABLES", "serve", []string{"GLIBC_TUNABLES="}, []string{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}},
		{"already executed with it", "serve", []string{"GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}, nil},
		{"the operator's own value stands", "serve", []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0"}, nil},
		{"PUSHD_HUGE_PAGES=off", "serve", []string{"PUSHD_HUGE_PAGES=off"}, nil},
		{"PUSHD_HUGE_PAGES=false", "import", []string{"PUSHD_HUGE_PAGES=false"}, nil},
		{"PUSHD_HUGE_PAGES=0", "serve", []string{"PUSHD_HUGE_PAGES=0"}, nil},
		{"PUSHD_HUGE_PAGES=on", "serve", []string{"PUSHD_HUGE_PAGES=on"}, []string{"PUSHD_HUGE_PAGES=on", "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"}},
		{"app create opens no store for long", "app", nil, nil},
		{"export reads only", "export", nil, nil},
		{"help", "--help", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.environ)
			got, ok := hugePagesEnv(c.cmd, in)
			if ok != (c.want != nil) || !slices.Equal(got, c.want) {
				t.Errorf("hugePagesEnv(%q, %q) = %q, %v; want %q", c.cmd, c.environ, got, ok, c.want)
			}
			if !slices.Equal(in, c.environ) {
				t.Errorf("hugePagesEnv changed its argument: %q, was %q", in, c.environ)
			}
		})
	}
}
