package fcm

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/golang-jwt/jwt/v4"

	"github.com/pushd/pushd/push"
)

// CredentialsJSON is the shape of an app's App.Credentials["fcm"]: the Google service-account
// JSON file as downloaded from the Firebase console (other fields of that file are accepted
// and ignored), plus an optional endpoint override for this app.
//
//	{
//	  "type": "service_account",
//	  "project_id": "demo-chat",
//	  "private_key_id": "3f2a...",
//	  "private_key": "-----BEGIN PRIVATE KEY-----\n...",
//	  "client_email": "pushd@demo-chat.iam.gserviceaccount.com",
//	  "token_uri": "https://oauth2.googleapis.com/token",
//	  "endpoint": "https://127.0.0.1:8443"
//	}
type CredentialsJSON struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	TokenURI     string `json:"token_uri"`
	// Endpoint overrides the FCM host for this app (wins over Config.Endpoint).
	Endpoint string `json:"endpoint,omitempty"`
}

// DefaultTokenURI is Google's OAuth2 token endpoint, used when the file has no token_uri.
const DefaultTokenURI = "https://oauth2.googleapis.com/token"

// Credentials are an app's parsed service account. Safe for concurrent use.
type Credentials struct {
	projectID string
	route     string // "project/" + projectID, built once: Route runs per delivery
	keyID     string
	email     string
	tokenURI  string
	endpoint  string
	key       *rsa.PrivateKey
}

// ParseCredentials validates an app's FCM credentials JSON (shape, URLs and the RSA key).
// The admin API calls it on upload. Error messages never contain key material.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Load parses raw (App.Credentials["fcm"]).
func Load(raw []byte) (*Credentials, error) {
	var j CredentialsJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("cannot decode fcm credentials: %w", err)
	}
	if j.Type != "" && j.Type != "service_account" {
		return nil, fmt.Errorf("cannot load fcm credentials: type %q is not service_account", j.Type)
	}
	if j.ProjectID == "" || j.ClientEmail == "" || j.PrivateKey == "" {
		return nil, errors.New("cannot load fcm credentials: project_id, client_email and private_key are required")
	}
	if j.TokenURI == "" {
		j.TokenURI = DefaultTokenURI
	}
	for _, u := range []string{j.TokenURI, j.Endpoint} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return nil, fmt.Errorf("cannot load fcm credentials: %q is not an http(s) URL", u)
		}
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM([]byte(j.PrivateKey))
	if err != nil {
		return nil, errors.New("cannot load fcm credentials: private_key is not a PEM RSA private key")
	}
	return &Credentials{
		projectID: j.ProjectID,
		route:     "project/" + j.ProjectID,
		keyID:     j.PrivateKeyID,
		email:     j.ClientEmail,
		tokenURI:  j.TokenURI,
		endpoint:  j.Endpoint,
		key:       key,
	}, nil
}

// ProjectID is the Firebase project the app sends for.
func (c *Credentials) ProjectID() string { return c.projectID }

// Route is the pool key part of a delivery: FCM has one credential and no environment per app.
func (c *Credentials) Route(*push.Delivery) (string, error) { return c.route, nil }
