package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestServeRemovedTransports: the previous HTTP/2 clients are gone. Their flags are refused as
// unknown; their environment variables, which would otherwise be ignored, refuse the start
// naming the variable, except "lean", the only transport left.
func TestServeRemovedTransports(t *testing.T) {
	parse := func(args ...string) (*serveConfig, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseServeFlags(args, fs)
	}
	if _, err := parse(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, f := range []string{"--apns-transport", "--fcm-transport"} {
		if _, err := parse(f, "lean"); err == nil || !strings.Contains(err.Error(), strings.TrimLeft(f, "-")) {
			t.Errorf("%s lean: %v, want the unknown-flag error", f, err)
		}
	}
	for name, old := range map[string]string{"PUSHD_APNS_TRANSPORT": "apns2", "PUSHD_FCM_TRANSPORT": "std"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "lean")
			if _, err := parse(); err != nil {
				t.Errorf("%s=lean: %v", name, err)
			}
			t.Setenv(name, old)
			if _, err := parse(); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%s: %v, want an error naming the variable", name, old, err)
			}
		})
	}
}
