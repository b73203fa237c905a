package sim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"
)

// NewAPNsKey generates a token-auth signing key like the .p8 file Apple issues: an EC P-256
// private key, PKCS#8, PEM "PRIVATE KEY". Apple's file carries neither the key id nor the team
// id; they are taken here for symmetry with the sender's config and checked for shape only.
// Register the public half with APNsPublicKey + s.AddKey (or use s.NewKey, which does both).
func NewAPNsKey(keyID, teamID string) (p8PEM []byte, err error) {
	if keyID == "" || teamID == "" {
		return nil, errors.New("cannot generate APNs key: key id and team id are required")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("cannot generate APNs key %s: %w", keyID, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("cannot encode APNs key %s: %w", keyID, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseAPNsKey decodes a .p8 (PKCS#8 PEM, EC P-256) signing key.
func ParseAPNsKey(p8PEM []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(p8PEM)
	if block == nil {
		return nil, errors.New("cannot parse APNs key: no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("cannot parse APNs key: %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("cannot parse APNs key: not an EC P-256 key")
	}
	return ek, nil
}

// APNsPublicKey returns the public half of a .p8 key, for AddKey or APNsConfig.Keys.
func APNsPublicKey(p8PEM []byte) (*ecdsa.PublicKey, error) {
	k, err := ParseAPNsKey(p8PEM)
	if err != nil {
		return nil, err
	}
	return &k.PublicKey, nil
}

// NewAPNsToken signs a provider token (ES256 JWT, header {alg,kid}, claims {iss,iat}) the way
// Apple specifies. Senders have their own signer; tests and Ceiling use this one.
func NewAPNsToken(key *ecdsa.PrivateKey, keyID, teamID string, iat time.Time) (string, error) {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"ES256","kid":"` + keyID + `"}`))
	claims := enc.EncodeToString([]byte(`{"iss":"` + teamID + `","iat":` + strconv.FormatInt(iat.Unix(), 10) + `}`))
	signing := head + "." + claims
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		return "", fmt.Errorf("cannot sign APNs token for key %s: %w", keyID, err)
	}
	var sig [64]byte
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + enc.EncodeToString(sig[:]), nil
}

// NewClientCert makes a self-signed TLS client certificate for APNs certificate auth, named
// like Apple's ("Apple Push Services: <first topic>"). The returned certificate has Leaf set;
// register it with s.AddClientCert(cert.Leaf, topics...) or APNsConfig.ClientCerts.
func NewClientCert(topic string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("cannot generate client certificate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("cannot generate certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Apple Push Services: " + topic, Organization: []string{"pushd test"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour), // provider certificates are valid for one year
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("cannot create client certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("cannot parse client certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// ClientCertPEM encodes a certificate from NewClientCert as PEM (certificate, then PKCS#8
// key), the form sender configs and apns2's certificate.FromPemBytes read.
func ClientCertPEM(c tls.Certificate) ([]byte, error) {
	if len(c.Certificate) == 0 {
		return nil, errors.New("cannot encode client certificate: empty")
	}
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("cannot encode client certificate key: %w", err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})...), nil
}
