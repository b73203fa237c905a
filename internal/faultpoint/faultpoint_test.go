package faultpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestFaultpointParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		name string
		at   int64
	}{
		{"", "", 1},
		{"accept/after-record", "accept/after-record", 1},
		{"fanout/after-send@3", "fanout/after-send", 3},
		{"x@", "x", 0},
		{"x@-2", "x", -2},
	} {
		name, at := parse(tc.in)
		if name != tc.name || at != tc.at {
			t.Errorf("parse(%q) = %q, %d; want %q, %d", tc.in, name, at, tc.name, tc.at)
		}
	}
}

func TestFaultpointUnarmedHitIsANoop(t *testing.T) {
	p := Define("test/unarmed")
	for range 3 {
		p.Hit() // PUSHD_FAULTPOINT is not set in tests: must return
	}
	if p.hits.Load() != 0 {
		t.Fatalf("an unarmed point counted %d hits", p.hits.Load())
	}
	if err := Check(); err != nil {
		t.Fatalf("Check with nothing armed: %v", err)
	}
}

func TestFaultpointCheckRefusesUnknownNames(t *testing.T) {
	Define("test/known")
	defer func(n string, a int64) { armedName, armedAt = n, a }(armedName, armedAt)
	armedName, armedAt = parse("test/knwon")
	if err := Check(); err == nil {
		t.Fatal("Check accepted a name no package defined")
	}
	armedName, armedAt = parse("test/known@0")
	if err := Check(); err == nil {
		t.Fatal("Check accepted count 0")
	}
	armedName, armedAt = parse("test/known@2")
	if err := Check(); err != nil {
		t.Fatalf("Check refused a defined point: %v", err)
	}
}

var helperPoint = Define("test/armed")

// The child half of TestFaultpointArmedKills: hits the point three times, printing before each.
func TestFaultpointHelperChild(t *testing.T) {
	if Armed() == "" {
		t.Skip("run by TestFaultpointArmedKills only")
	}
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(os.Stderr, "hit %d\n", i)
		helperPoint.Hit()
	}
}

func TestFaultpointArmedKills(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultpointHelperChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), Env+"=test/armed@2")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("the child was not killed: %v\n%s", err, out)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, want SIGKILL\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "hit 2\nfaultpoint test/armed reached: SIGKILL") || strings.Contains(s, "hit 3") {
		t.Fatalf("the kill did not land at the second hit:\n%s", s)
	}
}
