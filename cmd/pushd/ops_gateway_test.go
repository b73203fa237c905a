package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeOpsEndpointsOfAGatewayNode probes --ops-addr of a gateway-only process, as the
// deploy/ manifests do: /livez and /healthz for liveness, /readyz for readiness, /metrics with
// the own channel's series, while the device endpoint listens on --gateway-addr.
func TestServeOpsEndpointsOfAGatewayNode(t *testing.T) {
	opsC, gwC := make(chan string, 1), make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan error, 1)
	args := []string{"serve", "--data", t.TempDir(), "--roles", "gateway", "--ops-addr", "127.0.0.1:0",
		"--gateway-addr", "127.0.0.1:0", "--log-level", "warn"}
	go func() {
		finished <- run(ctx, args, io.Discard, io.Discard, &testHooks{
			opsReady:     func(a string) { opsC <- a },
			gatewayReady: func(a string) { gwC <- a },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-finished; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	var ops, gw string
	for ops == "" || gw == "" {
		select {
		case ops = <-opsC:
		case gw = <-gwC:
		case err := <-finished:
			finished <- err
			t.Fatalf("serve exited early: %v", err)
		}
	}
	get := func(path string) (int, string) {
		t.Helper()
		res, err := http.Get("http://" + ops + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for path, want := range map[string]string{"/livez": `{"status":"ok"}`, "/healthz": `{"status":"ok"}`, "/readyz": `{"status":"ready"}`} {
		if code, body := get(path); code != 200 || body != want {
			t.Errorf("GET %s: %d %s, want 200 %s", path, code, body, want)
		}
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "pushd_direct_connections") {
		t.Errorf("/metrics of a gateway node: %d, lacks pushd_direct_connections:\n%.300s", code, body)
	}
	// The device endpoint is another port: it does not answer the ops paths.
	if res, err := http.Get("http://" + gw + "/livez"); err == nil {
		res.Body.Close()
		if res.StatusCode == 200 {
			t.Errorf("the gateway port answers /livez")
		}
	}
}
