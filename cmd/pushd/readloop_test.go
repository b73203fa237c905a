//go:build linux

package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/pushd/pushd/sender/direct"
)

// TestServeReadLoopFlag: --direct-read-loop (or PUSHD_DIRECT_READ_LOOP) picks the gateway's
// read loop, epoll by default on Linux; anything else is refused by name.
func TestServeReadLoopFlag(t *testing.T) {
	parse := func(args ...string) (*serveConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseServeFlags(args, fs)
	}
	cfg, err := parse()
	if err != nil || cfg.Direct.ReadLoop != direct.ReadLoopEpoll {
		t.Errorf("default read loop: %+v, %v; want %s", cfg.Direct.ReadLoop, err, direct.ReadLoopEpoll)
	}
	cfg, err = parse("--direct-read-loop", "goroutine")
	if err != nil || cfg.Direct.ReadLoop != direct.ReadLoopGoroutine {
		t.Errorf("--direct-read-loop goroutine: %+v, %v", cfg.Direct.ReadLoop, err)
	}
	t.Setenv("PUSHD_DIRECT_READ_LOOP", "goroutine")
	cfg, err = parse()
	if err != nil || cfg.Direct.ReadLoop != direct.ReadLoopGoroutine {
		t.Errorf("PUSHD_DIRECT_READ_LOOP=goroutine: %+v, %v", cfg.Direct.ReadLoop, err)
	}
	if _, err := parse("--direct-read-loop", "threads"); err == nil || !strings.Contains(err.Error(), "--direct-read-loop") {
		t.Errorf("--direct-read-loop threads: %v, want an error naming the flag", err)
	}
}
