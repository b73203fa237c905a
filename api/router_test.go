package api

import (
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// TestAPIRouterAnswersTheGateway: GET /1.1/router gives an authenticated device the connect
// URL (the configured one, or the asked host with the gateway's port) and refuses bad input.
func TestAPIRouterAnswersTheGateway(t *testing.T) {
	e := newEnv(t)
	e.srv.RegisterRouter(RouterConfig{Port: func() string { return "8090" }, TTL: time.Hour})
	r := e.do("GET", "/1.1/router?installationId=abc", "", e.appHeaders()...)
	if r.Status != 200 {
		t.Fatalf("router: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	if m["server"] != "ws://pushd.test:8090/1.1/connect" || m["ttl"] != float64(3600) || m["v"] != float64(1) {
		t.Errorf("router answered %v", m)
	}
	for _, tc := range []struct {
		name, path string
		headers    []string
		status     int
		code       push.Code
	}{
		{"no installation id", "/1.1/router", e.appHeaders(), 400, push.CodeMissingRequired},
		{"unknown parameter", "/1.1/router?installationId=abc&appId=x", e.appHeaders(), 400, push.CodeValidation},
		{"no key", "/1.1/router?installationId=abc", []string{HeaderAppID, e.app.ID}, 401, push.CodeUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", tc.path, "", tc.headers...)
			if r.Status != tc.status || r.Code(t) != int(tc.code) {
				t.Errorf("%s: %d %s, want %d code %d", tc.path, r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
}

// TestAPIRouterConfiguredURL: a configured URL (TLS behind a proxy) is answered as it is.
func TestAPIRouterConfiguredURL(t *testing.T) {
	e := newEnv(t)
	e.srv.RegisterRouter(RouterConfig{URL: "wss://push.example.com/1.1/connect", Port: func() string { return "1" }, TTL: time.Minute})
	m := e.do("GET", "/1.1/router?installationId=abc", "", e.appHeaders()...).JSON(t)
	if m["server"] != "wss://push.example.com/1.1/connect" || m["ttl"] != float64(60) {
		t.Errorf("router answered %v", m)
	}
}
