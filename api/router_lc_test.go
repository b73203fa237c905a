package api

import (
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// TestAPIRouterLCAnswersTheOriginalSDK: GET /v1/route answers the original Android SDK's
// request (AppRouterService.getRTMConnectionServer: appId, installationId, secure=1, no key)
// with {server, secondary, ttl}, the gateway's root where the original's protocol is served.
func TestAPIRouterLCAnswersTheOriginalSDK(t *testing.T) {
	e := newEnv(t)
	e.srv.RegisterRouter(RouterConfig{Port: func() string { return "8090" }, TTL: time.Hour})
	r := e.do("GET", "/v1/route?appId="+e.app.ID+"&installationId=5d4c2bd0-9a8e-4b8e-8a52-0c1d6b3b7e01&secure=1", "")
	if r.Status != 200 {
		t.Fatalf("route: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	if m["server"] != "ws://pushd.test:8090/" || m["secondary"] != "ws://pushd.test:8090/" || m["ttl"] != float64(3600) {
		t.Errorf("route answered %v", m)
	}
	for _, tc := range []struct {
		name, path string
		status     int
		code       push.Code
	}{
		{"no app id", "/v1/route?installationId=abc&secure=1", 400, push.CodeMissingRequired},
		{"unknown app", "/v1/route?appId=nosuchapp&installationId=abc&secure=1", 404, push.CodeObjectNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", tc.path, "")
			if r.Status != tc.status || r.Code(t) != int(tc.code) {
				t.Errorf("%s: %d %s, want %d code %d", tc.path, r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
}

// TestAPIRouterLCConfiguredURL: behind a TLS proxy (--gateway-url) the original's devices get
// the same scheme and host, at the root.
func TestAPIRouterLCConfiguredURL(t *testing.T) {
	e := newEnv(t)
	e.srv.RegisterRouter(RouterConfig{URL: "wss://push.example.com/1.1/connect", Port: func() string { return "1" }, TTL: time.Minute})
	m := e.do("GET", "/v1/route?appId="+e.app.ID+"&installationId=abc&secure=1", "").JSON(t)
	if m["server"] != "wss://push.example.com/" || m["ttl"] != float64(60) {
		t.Errorf("route answered %v", m)
	}
}
