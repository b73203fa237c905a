package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// TestServeLCIdleFlag: --direct-lc-idle (env PUSHD_DIRECT_LC_IDLE) sets the original
// protocol's idle close, defaults to 390s, and is refused below 100ms.
func TestServeLCIdleFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg, err := parseServeFlags(nil, fs)
	if err != nil || cfg.Direct.LCIdle != 390*time.Second {
		t.Errorf("default: %v, %v; want 6m30s", cfg.Direct.LCIdle, err)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if cfg, err = parseServeFlags([]string{"--direct-lc-idle", "10m"}, fs); err != nil || cfg.Direct.LCIdle != 10*time.Minute {
		t.Errorf("--direct-lc-idle 10m: %v, %v", cfg.Direct.LCIdle, err)
	}
	t.Setenv("PUSHD_DIRECT_LC_IDLE", "7m")
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if cfg, err = parseServeFlags(nil, fs); err != nil || cfg.Direct.LCIdle != 7*time.Minute {
		t.Errorf("PUSHD_DIRECT_LC_IDLE=7m: %v, %v", cfg.Direct.LCIdle, err)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err = parseServeFlags([]string{"--direct-lc-idle", "0"}, fs); err == nil || !strings.Contains(err.Error(), "--direct-lc-idle") {
		t.Errorf("--direct-lc-idle 0: %v, want an error naming the flag", err)
	}
}
