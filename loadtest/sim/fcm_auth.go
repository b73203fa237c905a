package sim

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// OAuth2 service-account flow constants (gateways.md §2.1).
const (
	jwtBearerGrant   = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	googleTokenURL   = "https://oauth2.googleapis.com/token"
	scopeMessaging   = "https://www.googleapis.com/auth/firebase.messaging"
	scopeCloud       = "https://www.googleapis.com/auth/cloud-platform"
	assertionMaxLife = 3600 // seconds between iat and exp
	assertionSkew    = 60   // seconds an iat may lie in the future
)

// ServiceAccount is the part of a Google service-account JSON file the FCM flow uses.
type ServiceAccount struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	ClientID     string `json:"client_id"`
	AuthURI      string `json:"auth_uri"`
	TokenURI     string `json:"token_uri"`
}

// NewServiceAccount makes a service-account JSON file (fresh RSA-2048 key) for projectID whose
// token_uri is tokenURL. Register it with FCMConfig.ServiceAccounts or s.AddServiceAccount.
func NewServiceAccount(projectID, tokenURL string) ([]byte, error) {
	if projectID == "" || tokenURL == "" {
		return nil, errors.New("cannot create service account: project id and token URL are required")
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("cannot generate service-account key for project %s: %w", projectID, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("cannot encode service-account key for project %s: %w", projectID, err)
	}
	var kid [20]byte
	if _, err := rand.Read(kid[:]); err != nil {
		return nil, fmt.Errorf("cannot generate private key id: %w", err)
	}
	sa := ServiceAccount{
		Type:         "service_account",
		ProjectID:    projectID,
		PrivateKeyID: hex.EncodeToString(kid[:]),
		PrivateKey:   string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		ClientEmail:  "pushd-sim@" + projectID + ".iam.gserviceaccount.com",
		ClientID:     strconv.FormatUint(uint64(kid[0])<<32|uint64(kid[1])<<24|uint64(kid[2])<<16|uint64(kid[3]), 10),
		AuthURI:      "https://accounts.google.com/o/oauth2/auth",
		TokenURI:     tokenURL,
	}
	return json.MarshalIndent(sa, "", "  ")
}

// parseServiceAccount reads a service-account JSON file and its RSA key.
func parseServiceAccount(saJSON []byte) (ServiceAccount, *rsa.PrivateKey, error) {
	var sa ServiceAccount
	if err := json.Unmarshal(saJSON, &sa); err != nil {
		return sa, nil, fmt.Errorf("cannot parse service account: %w", err)
	}
	if sa.ClientEmail == "" || sa.ProjectID == "" {
		return sa, nil, errors.New("cannot parse service account: client_email and project_id are required")
	}
	block, _ := pem.Decode([]byte(sa.PrivateKey))
	if block == nil {
		return sa, nil, fmt.Errorf("cannot parse service account %s: private_key is not PEM", sa.ClientEmail)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return sa, nil, fmt.Errorf("cannot parse service account %s key: %w", sa.ClientEmail, err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return sa, nil, fmt.Errorf("cannot parse service account %s: key is not RSA", sa.ClientEmail)
	}
	return sa, rk, nil
}

// NewFCMAssertion signs the RS256 JWT a sender posts to the token endpoint for an access token
// (iss = client_email, scope = firebase.messaging, aud = token_uri, exp = iat + 1 h). Senders
// have their own signer; tests use this one.
func NewFCMAssertion(saJSON []byte, iat time.Time) (string, error) {
	sa, key, err := parseServiceAccount(saJSON)
	if err != nil {
		return "", err
	}
	head, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": sa.PrivateKeyID})
	if err != nil {
		return "", fmt.Errorf("cannot encode assertion header: %w", err)
	}
	claims, err := json.Marshal(map[string]any{"iss": sa.ClientEmail, "scope": scopeMessaging,
		"aud": sa.TokenURI, "iat": iat.Unix(), "exp": iat.Unix() + assertionMaxLife})
	if err != nil {
		return "", fmt.Errorf("cannot encode assertion claims: %w", err)
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(head) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("cannot sign assertion for %s: %w", sa.ClientEmail, err)
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

type fcmAccount struct {
	project string
	kid     string
	pub     *rsa.PublicKey
}

type accessToken struct {
	project string
	expires time.Time
}

// fcmAuth holds trusted service accounts and issued access tokens.
type fcmAuth struct {
	mu       sync.RWMutex
	accounts map[string]fcmAccount  // client_email → account
	tokens   map[string]accessToken // access token → grant
}

func (a *fcmAuth) add(saJSON []byte) (ServiceAccount, error) {
	sa, key, err := parseServiceAccount(saJSON)
	if err != nil {
		return sa, err
	}
	a.mu.Lock()
	a.accounts[sa.ClientEmail] = fcmAccount{project: sa.ProjectID, kid: sa.PrivateKeyID, pub: &key.PublicKey}
	a.mu.Unlock()
	return sa, nil
}

func (a *fcmAuth) lookup(tok string, now time.Time) (accessToken, bool) {
	a.mu.RLock()
	at, ok := a.tokens[tok]
	a.mu.RUnlock()
	return at, ok && now.Before(at.expires)
}

// serveToken is the OAuth2 token endpoint: jwt-bearer grant with an RS256 assertion.
func (s *FCM) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST required")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "cannot parse form")
		return
	}
	if g := r.PostForm.Get("grant_type"); g != jwtBearerGrant {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+g)
		return
	}
	project, desc := s.checkAssertion(r.PostForm.Get("assertion"))
	if desc != "" {
		oauthError(w, http.StatusBadRequest, "invalid_grant", desc)
		return
	}
	var b [24]byte
	_, _ = rand.Read(b[:])
	tok := "ya29.sim." + base64.RawURLEncoding.EncodeToString(b[:])
	now := s.now()
	s.auth.mu.Lock()
	if len(s.auth.tokens) > 1024 {
		for k, v := range s.auth.tokens {
			if !now.Before(v.expires) {
				delete(s.auth.tokens, k)
			}
		}
	}
	s.auth.tokens[tok] = accessToken{project: project, expires: now.Add(s.cfg.AccessTokenTTL)}
	s.auth.mu.Unlock()
	s.rec.authToken()
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok,
		"expires_in":   int(s.cfg.AccessTokenTTL / time.Second),
		"token_type":   "Bearer",
	})
}

// checkAssertion verifies the assertion; it returns the account's project, or an
// error_description in Google's words.
func (s *FCM) checkAssertion(assertion string) (project, desc string) {
	const badSig = "Invalid JWT Signature."
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return "", "Invalid JWT: malformed assertion."
	}
	enc := base64.RawURLEncoding
	var head struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Iss   string          `json:"iss"`
		Scope string          `json:"scope"`
		Aud   string          `json:"aud"`
		Iat   json.RawMessage `json:"iat"`
		Exp   json.RawMessage `json:"exp"`
	}
	hb, err1 := enc.DecodeString(parts[0])
	cb, err2 := enc.DecodeString(parts[1])
	sig, err3 := enc.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil {
		return "", "Invalid JWT: malformed assertion."
	}
	if head.Alg != "RS256" {
		return "", badSig
	}
	s.auth.mu.RLock()
	acct, ok := s.auth.accounts[claims.Iss]
	s.auth.mu.RUnlock()
	if !ok {
		return "", "Invalid grant: account not found"
	}
	if head.Kid != "" && head.Kid != acct.kid {
		return "", badSig
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(acct.pub, crypto.SHA256, sum[:], sig) != nil {
		return "", badSig
	}
	if claims.Aud != s.TokenURL() && claims.Aud != googleTokenURL {
		return "", "Invalid JWT: Failed audience check. The expected value is " + s.TokenURL()
	}
	scopeOK := false
	for _, sc := range strings.Fields(claims.Scope) {
		if sc == scopeMessaging || sc == scopeCloud {
			scopeOK = true
		}
	}
	if !scopeOK {
		return "", "Invalid OAuth scope or ID token audience provided."
	}
	iat, ok1 := parseUnix(claims.Iat)
	exp, ok2 := parseUnix(claims.Exp)
	now := s.now().Unix()
	if !ok1 || !ok2 || exp <= iat || exp-iat > assertionMaxLife || iat > now+assertionSkew || exp <= now {
		return "", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
	}
	return acct.project, ""
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}
