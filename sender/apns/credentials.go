package apns

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sideshow/apns2/certificate"
	"github.com/sideshow/apns2/token"

	"github.com/pushd/pushd/push"
)

// CredentialsJSON is the shape of an app's App.Credentials["apns"]. Token auth (teams) and
// certificate auth may both be configured: a delivery whose deviceProfile names a profile
// certificate uses it; otherwise token auth is used when any team is configured, else the
// production or development certificate by the delivery's environment.
//
//	{
//	  "defaultTopic": "com.example.chat",
//	  "teams": [{"teamId": "TEAM123456", "keyId": "KEY1234567", "p8": "-----BEGIN PRIVATE KEY-----\n..."}],
//	  "production":  {"pem": "-----BEGIN CERTIFICATE-----\n...-----BEGIN PRIVATE KEY-----\n..."},
//	  "development": {"p12": "<base64 PKCS#12>", "password": "secret"},
//	  "profiles":    {"enterprise": {"pem": "...", "env": "prod"}},
//	  "endpoint": "", "prodEndpoint": "", "devEndpoint": ""
//	}
type CredentialsJSON struct {
	// DefaultTopic is the topic (bundle id) used when neither the request nor the
	// installation names one. Required with token auth unless every installation has apnsTopic.
	DefaultTopic string `json:"defaultTopic,omitempty"`
	// Teams are the token-auth keys, one per Apple developer team.
	Teams []TeamKey `json:"teams,omitempty"`
	// Production and Development are the certificate-auth certificates per environment.
	Production  *CertJSON `json:"production,omitempty"`
	Development *CertJSON `json:"development,omitempty"`
	// Profiles are custom certificates selected by an installation's or request's deviceProfile.
	Profiles map[string]CertJSON `json:"profiles,omitempty"`
	// Endpoint overrides the gateway URL of both environments for this app; ProdEndpoint and
	// DevEndpoint override one environment (and win over Endpoint).
	Endpoint     string `json:"endpoint,omitempty"`
	ProdEndpoint string `json:"prodEndpoint,omitempty"`
	DevEndpoint  string `json:"devEndpoint,omitempty"`
}

// TeamKey is one token-auth signing key.
type TeamKey struct {
	TeamID string `json:"teamId"`
	KeyID  string `json:"keyId"`
	P8     string `json:"p8"` // the .p8 file: PEM, PKCS#8 EC P-256 private key
}

// CertJSON is one TLS client certificate: PEM (certificate and private key, the key possibly
// encrypted with Password) or P12 (base64 of a PKCS#12 file, with Password).
type CertJSON struct {
	PEM      string `json:"pem,omitempty"`
	P12      string `json:"p12,omitempty"`
	Password string `json:"password,omitempty"`
	// Env pins a profile certificate to "prod" or "dev"; empty: the delivery's environment.
	// Ignored for the production and development certificates.
	Env string `json:"env,omitempty"`
}

// ParseCredentials validates an app's APNs credentials JSON: shape, keys and certificates.
// The admin API calls it on upload. Error messages never contain key material.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Credentials are an app's parsed APNs credentials. Safe for concurrent use; the JWT of each
// team is shared by every pool of the app (Apple wants one token per team).
type Credentials struct {
	defaultTopic string
	teams        map[string]*token.Token // by team id
	teamRoutes   map[string][2]string    // by team id: Route's answers, [dev, prod], built once
	onlyTeam     string                  // the team when exactly one is configured
	prod, dev    *tls.Certificate
	profiles     map[string]profileCert
	prodURL      string // "" : Config.ProdEndpoint
	devURL       string
}

type profileCert struct {
	cert   tls.Certificate
	env    string    // "", "prod", "dev"
	routes [2]string // Route's answers for a dev and a prod delivery, built once
}

// Load parses raw (App.Credentials["apns"]).
func Load(raw []byte) (*Credentials, error) {
	var j CredentialsJSON
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("cannot decode apns credentials: %w", err)
	}
	c := &Credentials{
		defaultTopic: j.DefaultTopic,
		teams:        make(map[string]*token.Token, len(j.Teams)),
		teamRoutes:   make(map[string][2]string, len(j.Teams)),
		profiles:     make(map[string]profileCert, len(j.Profiles)),
		prodURL:      firstNonEmpty(j.ProdEndpoint, j.Endpoint),
		devURL:       firstNonEmpty(j.DevEndpoint, j.Endpoint),
	}
	for i, t := range j.Teams {
		if t.TeamID == "" || t.KeyID == "" {
			return nil, fmt.Errorf("cannot load apns team key %d: teamId and keyId are required", i)
		}
		if _, dup := c.teams[t.TeamID]; dup {
			return nil, fmt.Errorf("cannot load apns team %s: configured twice", t.TeamID)
		}
		key, err := token.AuthKeyFromBytes([]byte(t.P8))
		if err != nil {
			return nil, fmt.Errorf("cannot load the p8 key of apns team %s: %w", t.TeamID, keyError(err))
		}
		c.teams[t.TeamID] = newToken(key, t.KeyID, t.TeamID)
		c.teamRoutes[t.TeamID] = [2]string{routeTeam + "/" + t.TeamID + "/dev", routeTeam + "/" + t.TeamID + "/prod"}
		c.onlyTeam = t.TeamID
	}
	if len(c.teams) != 1 {
		c.onlyTeam = ""
	}
	var err error
	if j.Production != nil {
		if c.prod, err = loadCert(*j.Production); err != nil {
			return nil, fmt.Errorf("cannot load the apns production certificate: %w", err)
		}
	}
	if j.Development != nil {
		if c.dev, err = loadCert(*j.Development); err != nil {
			return nil, fmt.Errorf("cannot load the apns development certificate: %w", err)
		}
	}
	for name, pj := range j.Profiles {
		if name == "" {
			return nil, errors.New("cannot load apns profile certificates: empty profile name")
		}
		if pj.Env != "" && pj.Env != "prod" && pj.Env != "dev" {
			return nil, fmt.Errorf("cannot load apns profile %q: env must be prod or dev", name)
		}
		cert, err := loadCert(pj)
		if err != nil {
			return nil, fmt.Errorf("cannot load the certificate of apns profile %q: %w", name, err)
		}
		pc := profileCert{cert: *cert, env: pj.Env}
		for i, prod := range [2]bool{false, true} {
			env := pc.env
			if env == "" {
				env = envOf(prod)
			}
			pc.routes[i] = routeProfile + "/" + name + "/" + env
		}
		c.profiles[name] = pc
	}
	if len(c.teams) == 0 && c.prod == nil && c.dev == nil && len(c.profiles) == 0 {
		return nil, errors.New("cannot load apns credentials: no team key and no certificate")
	}
	return c, nil
}

func newToken(key *ecdsa.PrivateKey, keyID, teamID string) *token.Token {
	return &token.Token{AuthKey: key, KeyID: keyID, TeamID: teamID}
}

// keyError keeps parse errors generic: they must not quote key bytes.
func keyError(err error) error {
	if errors.Is(err, token.ErrAuthKeyNotPem) || errors.Is(err, token.ErrAuthKeyNotECDSA) {
		return err
	}
	return errors.New("not a PKCS#8 EC private key")
}

func loadCert(j CertJSON) (*tls.Certificate, error) {
	var (
		cert tls.Certificate
		err  error
	)
	switch {
	case j.PEM != "" && j.P12 != "":
		return nil, errors.New("give either pem or p12, not both")
	case j.PEM != "":
		cert, err = certificate.FromPemBytes([]byte(j.PEM), j.Password)
		if err != nil {
			return nil, fmt.Errorf("cannot read pem: %w", certError(err))
		}
	case j.P12 != "":
		der, derr := base64.StdEncoding.DecodeString(j.P12)
		if derr != nil {
			return nil, errors.New("p12 is not base64")
		}
		cert, err = certificate.FromP12Bytes(der, j.Password)
		if err != nil {
			return nil, fmt.Errorf("cannot read p12: %w", certError(err))
		}
	default:
		return nil, errors.New("pem or p12 is required")
	}
	if cert.Leaf == nil {
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return nil, errors.New("unreadable certificate")
		}
		cert.Leaf = leaf
	}
	if !samePublicKey(cert.Leaf.PublicKey, cert.PrivateKey) {
		return nil, errors.New("the private key does not belong to the certificate")
	}
	if now := time.Now(); now.After(cert.Leaf.NotAfter) {
		return nil, fmt.Errorf("the certificate expired on %s", cert.Leaf.NotAfter.UTC().Format(time.DateOnly))
	}
	return &cert, nil
}

func samePublicKey(pub any, priv crypto.PrivateKey) bool {
	s, ok := priv.(crypto.Signer)
	if !ok {
		return false
	}
	p, ok := pub.(interface{ Equal(crypto.PublicKey) bool })
	return ok && p.Equal(s.Public())
}

func certError(err error) error {
	if errors.Is(err, certificate.ErrNoCertificate) || errors.Is(err, certificate.ErrNoPrivateKey) ||
		errors.Is(err, certificate.ErrFailedToDecryptKey) || errors.Is(err, certificate.ErrFailedToParsePrivateKey) {
		return err
	}
	return errors.New("unreadable certificate or key, or wrong password")
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Route kinds, the first part of a route key.
const (
	routeTeam    = "team"
	routeCert    = "cert"
	routeProfile = "profile"
)

// Route says which credential and environment serve d, as a key naming one pool:
// "team/<teamId>/<env>", "cert/<env>" or "profile/<name>/<env>". An error is a permanent,
// token-free failure reason for d (unknown profile, ambiguous team, ...).
func (c *Credentials) Route(d *push.Delivery) (string, error) {
	if p := d.Target.Profile; p != "" && p != "_default" {
		pc, ok := c.profiles[p]
		if !ok {
			return "", fmt.Errorf("apns deviceProfile %q has no certificate", p)
		}
		return pc.routes[envIndex(d.Prod)], nil
	}
	if len(c.teams) > 0 {
		team := d.Message.TeamID
		if team == "" {
			team = d.Target.TeamID
		}
		if team == "" {
			team = c.onlyTeam
		}
		if team == "" {
			return "", errors.New("apns_team_id required: the app has several apns teams and neither the request nor the installation names one")
		}
		routes, ok := c.teamRoutes[team]
		if !ok {
			return "", fmt.Errorf("apns team %s is not configured", team)
		}
		return routes[envIndex(d.Prod)], nil
	}
	if d.Prod && c.prod == nil {
		return "", errors.New("no apns production certificate configured")
	}
	if !d.Prod && c.dev == nil {
		return "", errors.New("no apns development certificate configured")
	}
	return certRoutes[envIndex(d.Prod)], nil
}

// certRoutes are Route's answers for a certificate's dev and prod deliveries: Route runs per
// delivery and builds no string.
var certRoutes = [2]string{routeCert + "/dev", routeCert + "/prod"}

func envIndex(prod bool) int {
	if prod {
		return 1
	}
	return 0
}

func envOf(prod bool) string {
	if prod {
		return "prod"
	}
	return "dev"
}

// Teams lists the configured team ids, sorted.
func (c *Credentials) Teams() []string {
	out := make([]string, 0, len(c.teams))
	for t := range c.teams {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
