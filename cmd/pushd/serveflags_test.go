package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// parseServe parses args as serve's flags, on a fresh flag set that prints nothing.
func parseServe(args ...string) (*serveConfig, error) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return parseServeFlags(args, fs)
}

// refusal is serve flags that must be refused with an error naming want.
type refusal struct {
	args []string
	want string
}

// checkRefused fails t for each case that parses, or fails without naming its want.
func checkRefused(t *testing.T, cases ...refusal) {
	t.Helper()
	for _, tc := range cases {
		if _, err := parseServe(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}
