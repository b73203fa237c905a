package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestServeHonorFlags: the Honor endpoint overrides come from flags or the environment, the
// simulator's address defaults to :2206, and --sim refuses endpoint overrides it would ignore.
func TestServeHonorFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cfg, err := parseServeFlags(nil, fs)
	if err != nil || cfg.HonorEndpoint != "" || cfg.HonorTokenURL != "" || cfg.SimHonorAddr != "127.0.0.1:2206" {
		t.Fatalf("defaults: %q %q %q, %v", cfg.HonorEndpoint, cfg.HonorTokenURL, cfg.SimHonorAddr, err)
	}
	t.Setenv("PUSHD_HONOR_TOKEN_URL", "https://iam.example/auth/token")
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	cfg, err = parseServeFlags([]string{"--honor-endpoint", "https://honor.example"}, fs)
	if err != nil || cfg.HonorEndpoint != "https://honor.example" || cfg.HonorTokenURL != "https://iam.example/auth/token" {
		t.Fatalf("overrides: %q %q, %v", cfg.HonorEndpoint, cfg.HonorTokenURL, err)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err = parseServeFlags([]string{"--dev", "--sim", "--honor-endpoint", "https://honor.example"}, fs)
	if err == nil || !strings.Contains(err.Error(), "--honor-endpoint") {
		t.Fatalf("--sim with --honor-endpoint: %v, want a refusal naming it", err)
	}
}
