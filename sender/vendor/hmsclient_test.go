package vendor

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// newHMSFamilyTest is an HMSFamily of string messages against a real HTTP server: /token
// mints "tN" (N counting), or refuses when refuse is set; /send answers what send writes.
func newHMSFamilyTest(t *testing.T, refuse bool, send http.HandlerFunc) *HMSFamily[string] {
	t.Helper()
	var mints atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/token", func(w http.ResponseWriter, _ *http.Request) {
		if refuse {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "t" + strconv.FormatInt(mints.Add(1), 10), "expires_in": 3600})
	})
	mux.HandleFunc("/send", send)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	now := time.Unix(1700000000, 0)
	c := &HMSFamily[string]{
		Name: "acme",
		URL:  srv.URL + "/send",
		TS:   NewTokenSource(srv.URL+"/token", "id", "secret", srv.Client(), time.Minute),
		HC:   srv.Client(),
		Now:  func() time.Time { return now },
		Build: func(body []byte, _, _ time.Time) (string, error) {
			return string(body), nil
		},
		Encode: func(dst []byte, m *string, tokens []string) ([]byte, error) {
			return json.Marshal(map[string]any{"m": *m, "tokens": tokens})
		},
		Header: func(h http.Header, now time.Time) { h.Set("X-Now", strconv.FormatInt(now.Unix(), 10)) },
		Classify: func(status int, body []byte, _ string, _ []string, out []gateway.Reply) {
			r := gateway.Reply{Kind: gateway.KindSent}
			if status == http.StatusUnauthorized {
				r = gateway.Reply{Kind: gateway.KindAuth, Reason: string(body)}
			}
			for i := range out {
				out[i] = r
			}
		},
	}
	c.Start(10, 1)
	t.Cleanup(c.Close)
	return c
}

func hmsFamilyDelivery() *push.Delivery {
	return &push.Delivery{Message: &push.Message{Body: []byte("hello")}, Target: push.Target{DeviceID: "tok1"}}
}

// TestHMSFamilyRequest: the request carries the bearer, the JSON content type, the vendor's
// own headers at the client's clock, and the encoded message of the delivery's token; an
// AUTH reply drops the bearer, so the next request mints another.
func TestHMSFamilyRequest(t *testing.T) {
	var unauthorized atomic.Bool
	c := newHMSFamilyTest(t, false, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if got, want := string(body), `{"m":"hello","tokens":["tok1"]}`; got != want {
			t.Errorf("body %s, want %s", got, want)
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer t") ||
			r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Now") != "1700000000" {
			t.Errorf("headers %v", r.Header)
		}
		if unauthorized.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "expired")
		}
	})
	if r := c.Send(context.Background(), hmsFamilyDelivery()); r.Kind != gateway.KindSent {
		t.Fatalf("send: %+v", r)
	}
	unauthorized.Store(true)
	if r := c.Send(context.Background(), hmsFamilyDelivery()); r.Kind != gateway.KindAuth || r.Reason != "expired" {
		t.Fatalf("send: %+v, want auth", r)
	}
	unauthorized.Store(false)
	if r := c.Send(context.Background(), hmsFamilyDelivery()); r.Kind != gateway.KindSent {
		t.Fatalf("send: %+v", r)
	}
	if n := c.TokensMinted(); n != 2 {
		t.Fatalf("%d tokens minted, want 2 (the first dropped on AUTH)", n)
	}
	if c.Requests() != 3 || c.Targets() != 3 {
		t.Fatalf("%d requests of %d targets, want 3 of 3", c.Requests(), c.Targets())
	}
}

// TestHMSFamilyRefusedToken: a refused client is the credentials' failure, its reason named by
// the vendor only when NameCredReasons says so.
func TestHMSFamilyRefusedToken(t *testing.T) {
	for _, named := range []bool{false, true} {
		c := newHMSFamilyTest(t, true, func(http.ResponseWriter, *http.Request) { t.Error("sent without a token") })
		c.NameCredReasons = named
		want := "oauth2 token refused: invalid_client"
		if named {
			want = "acme " + want
		}
		if r := c.Send(context.Background(), hmsFamilyDelivery()); r.Kind != gateway.KindCredentials || r.Reason != want {
			t.Fatalf("NameCredReasons %v: %+v, want credentials %q", named, r, want)
		}
	}
}
