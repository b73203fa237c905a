package vendor

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// FuzzVendorTokenReply: any token endpoint answer gives a token with a lifetime within
// (0, 30 days], or an error: a credentials error only for a 4xx other than 429, never for a
// 200, a 429 or a 5xx; a token only from a 200.
func FuzzVendorTokenReply(f *testing.F) {
	f.Add(200, []byte(`{"access_token":"CF3Xfake==","expires_in":3600,"token_type":"Bearer"}`))
	f.Add(200, []byte(`{"access_token":"x","expires_in":9000000000}`))
	f.Add(200, []byte(`{"access_token":"x","expires_in":-5}`))
	f.Add(200, []byte(`{"expires_in":3600}`))
	f.Add(400, []byte(`{"error":1101,"error_description":"invalid client"}`))
	f.Add(401, []byte(`{"error":"invalid_client"}`))
	f.Add(429, []byte(``))
	f.Add(503, []byte(`<html>`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		tok, life, err := parseTokenReply(status, body)
		var ce *CredError
		isCred := errors.As(err, &ce)
		switch {
		case err == nil:
			if status != http.StatusOK || tok == "" || life <= 0 || life > maxTokenLife*time.Second {
				t.Fatalf("%d %q: token %q for %v", status, body, tok, life)
			}
		case isCred && (status == http.StatusOK || status == http.StatusTooManyRequests || status >= 500):
			t.Fatalf("%d %q: credentials refused: %v", status, body, err)
		case isCred && ce.Reason == "":
			t.Fatalf("%d %q: credentials error without a reason", status, body)
		}
	})
}

func TestVendorTokenReplyLifetime(t *testing.T) {
	for body, want := range map[string]time.Duration{
		`{"access_token":"x","expires_in":3600}`:       time.Hour,
		`{"access_token":"x","expires_in":600}`:        10 * time.Minute,
		`{"access_token":"x"}`:                         time.Hour,
		`{"access_token":"x","expires_in":9000000000}`: time.Hour, // 285 years: not believed
	} {
		if _, life, err := parseTokenReply(200, []byte(body)); err != nil || life != want {
			t.Errorf("%s: %v, %v; want %v", body, life, err, want)
		}
	}
}
