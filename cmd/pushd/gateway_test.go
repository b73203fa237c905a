package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestServeGatewayFlagsValidated: the gateway role's settings are refused out of range, not
// replaced by a default unseen.
func TestServeGatewayFlagsValidated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--direct-heartbeat", "0"}, "--direct-heartbeat"},
		{[]string{"--direct-max-frame", "10"}, "--direct-max-frame"},
		{[]string{"--direct-connect-rate", "0"}, "--direct-connect-rate"},
		{[]string{"--direct-offline-limit", "0"}, "--direct-offline-limit"},
		{[]string{"--gateway-addr", "nonsense"}, "--gateway-addr"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		_, err := parseServeFlags(tc.args, fs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cfg, err := parseServeFlags([]string{"--direct-heartbeat", "30s", "--gateway-addr", "127.0.0.1:9999"}, fs)
	if err != nil || cfg.Direct.Heartbeat.String() != "30s" || cfg.GatewayAddr != "127.0.0.1:9999" {
		t.Errorf("good flags: %+v, %v", cfg, err)
	}
}
