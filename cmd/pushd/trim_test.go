package main

import (
	"testing"
	"time"
)

// --log-trim-every sets the embedded log's trim interval: 30s by default, from the flag or
// PUSHD_LOG_TRIM_EVERY, and refused unless positive (0 would silently mean the default,
// a negative value no trim at all and a log that grows forever).
func TestServeLogTrimEvery(t *testing.T) {
	c, err := parseServeFlags(nil, newFlagSet())
	if err != nil || c.LogTrimEvery != 30*time.Second {
		t.Fatalf("default: %v %v, want 30s", c, err)
	}
	if c, err = parseServeFlags([]string{"--log-trim-every", "250ms"}, newFlagSet()); err != nil || c.LogTrimEvery != 250*time.Millisecond {
		t.Fatalf("--log-trim-every 250ms: %v %v", c, err)
	}
	for _, v := range []string{"0", "-1s"} {
		if _, err := parseServeFlags([]string{"--log-trim-every", v}, newFlagSet()); err == nil {
			t.Errorf("--log-trim-every %s accepted", v)
		}
	}
	t.Setenv("PUSHD_LOG_TRIM_EVERY", "2s")
	if c, err = parseServeFlags(nil, newFlagSet()); err != nil || c.LogTrimEvery != 2*time.Second {
		t.Fatalf("PUSHD_LOG_TRIM_EVERY=2s: %v %v", c, err)
	}
	t.Setenv("PUSHD_LOG_TRIM_EVERY", "-2s")
	if _, err := parseServeFlags(nil, newFlagSet()); err == nil || err.Error() != "--log-trim-every must be positive, got -2s" {
		t.Errorf("PUSHD_LOG_TRIM_EVERY=-2s: err %v", err)
	}
}
