package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// startOps runs serve (fan-out and scheduler roles) with --ops-addr on a free port plus
// extra, and returns the ops address; serve stops when the test ends.
func startOps(t *testing.T, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opsC := make(chan string, 1)
	finished := make(chan error, 1)
	args := append([]string{"serve", "--data", t.TempDir(), "--roles", "fanout,scheduler", "--ops-addr", "127.0.0.1:0", "--drain-delay", "1ms", "--log-level", "warn"}, extra...)
	go func() {
		finished <- run(ctx, args, io.Discard, io.Discard, &testHooks{opsReady: func(a string) { opsC <- a }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-finished; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case a := <-opsC:
		return a
	case err := <-finished:
		finished <- err
		t.Fatalf("serve exited early: %v", err)
		return ""
	}
}

// unsetPprofEnv unsets PUSHD_PPROF for the test (t.Setenv restores it afterwards).
func unsetPprofEnv(t *testing.T) {
	t.Setenv("PUSHD_PPROF", "")
	if err := os.Unsetenv("PUSHD_PPROF"); err != nil {
		t.Fatal(err)
	}
}

func getOps(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	res, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServePprofOffByDefault: without --pprof the ops port has no /debug/pprof/.
func TestServePprofOffByDefault(t *testing.T) {
	unsetPprofEnv(t)
	addr := startOps(t)
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if code, body := getOps(t, addr, p); code != http.StatusNotFound || !strings.Contains(body, `"code":404`) {
			t.Fatalf("GET %s without --pprof: %d %.200s, want the 404 {code, error}", p, code, body)
		}
	}
}

// TestServePprofOn: PUSHD_PPROF=true (and --pprof) serve the profiler on the ops port.
func TestServePprofOn(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		flags     []string
	}{{"env", "true", nil}, {"flag", "", []string{"--pprof"}}} {
		t.Run(tc.name, func(t *testing.T) {
			unsetPprofEnv(t)
			if tc.env != "" {
				t.Setenv("PUSHD_PPROF", tc.env)
			}
			addr := startOps(t, tc.flags...)
			if code, body := getOps(t, addr, "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "allocs") {
				t.Fatalf("index: %d %.200s", code, body)
			}
			if code, body := getOps(t, addr, "/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile") {
				t.Fatalf("heap: %d %.200s", code, body)
			}
			if code, body := getOps(t, addr, "/debug/pprof/cmdline"); code != http.StatusOK || !strings.Contains(body, "pushd") {
				t.Fatalf("cmdline: %d %.200s", code, body)
			}
			// The ops endpoints are unchanged next to it.
			if code, _ := getOps(t, addr, "/healthz"); code != http.StatusOK {
				t.Fatalf("/healthz: %d", code)
			}
		})
	}
}

// TestServePprofNeedsOpsAddr: --pprof without --ops-addr is refused, not silently ignored.
func TestServePprofNeedsOpsAddr(t *testing.T) {
	err := run(context.Background(), []string{"serve", "--data", t.TempDir(), "--pprof"}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "--pprof needs --ops-addr") {
		t.Fatalf("serve --pprof without --ops-addr: %v", err)
	}
}
