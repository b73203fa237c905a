package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/lease"
)

// TestServeLeaseFlags: the cluster leases' TTL and renewal period come from flags or the
// environment, and a renewal period that could lose a lease to one late renewal is refused.
func TestServeLeaseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lease-ttl", "0"}, "--lease-ttl"},
		{[]string{"--lease-renew", "-1s"}, "--lease-renew"},
		{[]string{"--lease-ttl", "10s", "--lease-renew", "6s"}, "--lease-renew"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		_, err := parseServeFlags(tc.args, fs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cfg, err := parseServeFlags(nil, fs)
	if err != nil || cfg.Lease.TTL != lease.DefaultTTL || cfg.Lease.Renew != lease.DefaultRenew {
		t.Errorf("defaults: %+v, %v", cfg.Lease, err)
	}
	t.Setenv("PUSHD_LEASE_TTL", "30s")
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	cfg, err = parseServeFlags([]string{"--lease-renew", "10s"}, fs)
	if err != nil || cfg.Lease.TTL != 30*time.Second || cfg.Lease.Renew != 10*time.Second {
		t.Errorf("PUSHD_LEASE_TTL=30s --lease-renew 10s: %+v, %v", cfg.Lease, err)
	}
}
