package sim

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"
)

// oauthRefusals are the error objects an OAuth2 client-credentials endpoint answers with HTTP
// 400: to a request that is not a POSTed form, to another grant type, to an unknown client or
// a wrong secret.
type oauthRefusals struct{ request, grant, client map[string]any }

// clientGrant reads the client-credentials grant of r (form grant_type, client_id,
// client_secret) and returns the client id; secretOf gives a client's secret (ok false: no
// such client). A bad grant is answered here, with the refusal's object, and ok is false.
func clientGrant(w http.ResponseWriter, r *http.Request, refuse oauthRefusals, secretOf func(id string) (string, bool)) (id string, ok bool) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		writeJSON(w, http.StatusBadRequest, refuse.request)
		return "", false
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, refuse.grant)
		return "", false
	}
	id = r.PostForm.Get("client_id")
	if want, known := secretOf(id); !known || want != r.PostForm.Get("client_secret") {
		writeJSON(w, http.StatusBadRequest, refuse.client)
		return "", false
	}
	return id, true
}

// newAccessToken is a fresh random access token: prefix, 48 hex digits and "==".
func newAccessToken(prefix string) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:]) + "=="
}

// writeAccessToken answers the grant of tok, valid ttl, as a Bearer token.
func writeAccessToken(w http.ResponseWriter, tok string, ttl time.Duration) {
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok, "expires_in": int64(ttl / time.Second), "token_type": "Bearer",
	})
}
