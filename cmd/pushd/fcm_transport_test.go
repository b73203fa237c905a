package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestServeFCMTransportFlag: --fcm-transport (env PUSHD_FCM_TRANSPORT) picks the FCM HTTP/2
// client, lean by default, and refuses an unknown one naming the flag.
func TestServeFCMTransportFlag(t *testing.T) {
	parse := func(args ...string) (*serveConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseServeFlags(args, fs)
	}
	if cfg, err := parse(); err != nil || cfg.Sender.FCM.Transport != "lean" {
		t.Errorf("default: %v, %v; want lean", cfg.Sender.FCM.Transport, err)
	}
	if cfg, err := parse("--fcm-transport", "std"); err != nil || cfg.Sender.FCM.Transport != "std" {
		t.Errorf("--fcm-transport std: %v, %v", cfg.Sender.FCM.Transport, err)
	}
	t.Setenv("PUSHD_FCM_TRANSPORT", "std")
	if cfg, err := parse(); err != nil || cfg.Sender.FCM.Transport != "std" {
		t.Errorf("PUSHD_FCM_TRANSPORT=std: %v, %v", cfg.Sender.FCM.Transport, err)
	}
	if _, err := parse("--fcm-transport", "http1"); err == nil || !strings.Contains(err.Error(), "--fcm-transport") {
		t.Errorf("--fcm-transport http1: %v, want an error naming the flag", err)
	}
}
