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
	checkRefused(t,
		refusal{[]string{"--direct-heartbeat", "0"}, "--direct-heartbeat"},
		refusal{[]string{"--direct-max-frame", "10"}, "--direct-max-frame"},
		refusal{[]string{"--direct-connect-rate", "0"}, "--direct-connect-rate"},
		refusal{[]string{"--direct-offline-limit", "0"}, "--direct-offline-limit"},
		refusal{[]string{"--gateway-addr", "nonsense"}, "--gateway-addr"},
	)
	cfg, err := parseServe("--direct-heartbeat", "30s", "--gateway-addr", "127.0.0.1:9999")
	if err != nil || cfg.Direct.Heartbeat.String() != "30s" || cfg.GatewayAddr != "127.0.0.1:9999" {
		t.Errorf("good flags: %+v, %v", cfg, err)
	}
}

// TestServeGatewayAdvertise: in a cluster the node's advertised URL is checked and given the
// connect path; a wrong one is refused naming the flag.
func TestServeGatewayAdvertise(t *testing.T) {
	kafka := []string{"--log", "kafka", "--kafka-brokers", "127.0.0.1:9092", "--gateway-addr", ":8090"}
	for _, tc := range []struct {
		args []string
		want string // the advertised URL, or (with err) what the error names
		err  bool
	}{
		{[]string{"--gateway-advertise", "ws://gw-1.example.com:8090"}, "ws://gw-1.example.com:8090/1.1/connect", false},
		{[]string{"--gateway-advertise", "wss://gw-1.example.com/1.1/connect"}, "wss://gw-1.example.com/1.1/connect", false},
		{[]string{"--gateway-advertise", "http://gw-1.example.com"}, "--gateway-advertise", true},
		{[]string{"--gateway-advertise", "ws://gw-1.example.com/elsewhere"}, "--gateway-advertise", true},
		{[]string{"--gateway-advertise", "ws://gw-1.example.com", "--gateway-advertise-ttl", "0"}, "--gateway-advertise-ttl", true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg, err := parseServeFlags(append(append([]string{}, kafka...), tc.args...), fs)
		switch {
		case tc.err && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		case !tc.err && (err != nil || cfg.GatewayAdvertise != tc.want):
			t.Errorf("%v: %+v, %v; want %s", tc.args, cfg, err, tc.want)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cfg, err := parseServeFlags(kafka, fs)
	if err != nil || !strings.HasPrefix(cfg.GatewayAdvertise, "ws://") || !strings.HasSuffix(cfg.GatewayAdvertise, ":8090/1.1/connect") {
		t.Errorf("no --gateway-advertise: %q, %v; want ws://<hostname>:8090/1.1/connect", cfg.GatewayAdvertise, err)
	}
}
