package api

import "testing"

// TestAPILivez: /livez answers like /healthz, also while the server is not ready (a draining
// node is alive: Kubernetes must not restart it).
func TestAPILivez(t *testing.T) {
	e := newEnv(t)
	e.srv.SetReady(false)
	if r := e.do("GET", "/livez", ""); r.Status != 200 || string(r.Body) != `{"status":"ok"}` {
		t.Fatalf("livez while not ready: %d %s", r.Status, r.Body)
	}
	if r := e.do("POST", "/livez", ""); r.Status != 405 {
		t.Fatalf("POST livez: %d %s", r.Status, r.Body)
	}
}
