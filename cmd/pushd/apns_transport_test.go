package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestServeAPNsTransportFlag: --apns-transport (env PUSHD_APNS_TRANSPORT) picks the APNs
// HTTP/2 client, lean by default, and refuses an unknown one naming the flag.
func TestServeAPNsTransportFlag(t *testing.T) {
	parse := func(args ...string) (*serveConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseServeFlags(args, fs)
	}
	if cfg, err := parse(); err != nil || cfg.Sender.APNs.Transport != "lean" {
		t.Errorf("default: %v, %v; want lean", cfg.Sender.APNs.Transport, err)
	}
	if cfg, err := parse("--apns-transport", "apns2"); err != nil || cfg.Sender.APNs.Transport != "apns2" {
		t.Errorf("--apns-transport apns2: %v, %v", cfg.Sender.APNs.Transport, err)
	}
	t.Setenv("PUSHD_APNS_TRANSPORT", "apns2")
	if cfg, err := parse(); err != nil || cfg.Sender.APNs.Transport != "apns2" {
		t.Errorf("PUSHD_APNS_TRANSPORT=apns2: %v, %v", cfg.Sender.APNs.Transport, err)
	}
	if _, err := parse("--apns-transport", "http1"); err == nil || !strings.Contains(err.Error(), "--apns-transport") {
		t.Errorf("--apns-transport http1: %v, want an error naming the flag", err)
	}
}
