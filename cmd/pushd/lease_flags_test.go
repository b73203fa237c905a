package main

import (
	"testing"
	"time"

	"github.com/pushd/pushd/internal/lease"
)

// TestServeLeaseFlags: the cluster leases' TTL and renewal period come from flags or the
// environment, and a renewal period that could lose a lease to one late renewal is refused.
func TestServeLeaseFlags(t *testing.T) {
	checkRefused(t,
		refusal{[]string{"--lease-ttl", "0"}, "--lease-ttl"},
		refusal{[]string{"--lease-renew", "-1s"}, "--lease-renew"},
		refusal{[]string{"--lease-ttl", "10s", "--lease-renew", "6s"}, "--lease-renew"},
	)
	cfg, err := parseServe()
	if err != nil || cfg.Lease.TTL != lease.DefaultTTL || cfg.Lease.Renew != lease.DefaultRenew {
		t.Errorf("defaults: %+v, %v", cfg.Lease, err)
	}
	t.Setenv("PUSHD_LEASE_TTL", "30s")
	cfg, err = parseServe("--lease-renew", "10s")
	if err != nil || cfg.Lease.TTL != 30*time.Second || cfg.Lease.Renew != 10*time.Second {
		t.Errorf("PUSHD_LEASE_TTL=30s --lease-renew 10s: %+v, %v", cfg.Lease, err)
	}
}
