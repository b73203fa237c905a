package pebble

import (
	"context"
	"testing"
	"time"
)

// A lease held by the process before a crash is free once the directory is opened again (only
// one process opens it), and keeps its epoch.
func TestStoreLeasesFreedAtOpen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.AcquireLease(ctx, "scheduler", "before-crash", now, time.Minute); err != nil || !ok {
		t.Fatalf("AcquireLease = %v, %v", ok, err)
	}
	s = closeReopen(t, s, dir)
	l, ok, err := s.AcquireLease(ctx, "scheduler", "after-restart", now.Add(time.Second), time.Minute)
	if err != nil || !ok || l.Epoch != 2 {
		t.Fatalf("AcquireLease after reopening = %+v, %v, %v; want it free, at epoch 2", l, ok, err)
	}
}
