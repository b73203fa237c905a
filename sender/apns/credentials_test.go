package apns

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/sender/gateway"
)

func TestAPNsParseCredentials(t *testing.T) {
	p8, err := sim.NewAPNsKey(testKey, testTeam)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := sim.NewClientCert(testTopic)
	certPEM, _ := sim.ClientCertPEM(cert)
	other, _ := sim.NewClientCert(testTopic)
	otherPEM, _ := sim.ClientCertPEM(other)
	// the certificate of one pair with the key of the other
	mismatched := string(certPEM[:strings.Index(string(certPEM), "-----BEGIN PRIVATE KEY")]) +
		string(otherPEM[strings.Index(string(otherPEM), "-----BEGIN PRIVATE KEY"):])
	enc := func(j CredentialsJSON) string { b, _ := json.Marshal(j); return string(b) }
	cases := []struct {
		name, raw, errMatch string
	}{
		{"token", enc(CredentialsJSON{DefaultTopic: testTopic, Teams: []TeamKey{{TeamID: testTeam, KeyID: testKey, P8: string(p8)}}}), ""},
		{"cert", enc(CredentialsJSON{Production: &CertJSON{PEM: string(certPEM)}}), ""},
		{"profile", enc(CredentialsJSON{Profiles: map[string]CertJSON{"x": {PEM: string(certPEM), Env: "dev"}}}), ""},
		{"empty", `{}`, "no team key and no certificate"},
		{"not json", `{`, "cannot decode"},
		{"unknown field", `{"team":"x"}`, "unknown field"},
		{"bad p8", enc(CredentialsJSON{Teams: []TeamKey{{TeamID: testTeam, KeyID: testKey, P8: "nope"}}}), "p8 key of apns team " + testTeam},
		{"missing key id", enc(CredentialsJSON{Teams: []TeamKey{{TeamID: testTeam, P8: string(p8)}}}), "keyId are required"},
		{"duplicate team", enc(CredentialsJSON{Teams: []TeamKey{{TeamID: testTeam, KeyID: testKey, P8: string(p8)}, {TeamID: testTeam, KeyID: "KEY7654321", P8: string(p8)}}}), "configured twice"},
		{"cert without key", enc(CredentialsJSON{Production: &CertJSON{PEM: string(certPEM[:strings.Index(string(certPEM), "-----BEGIN PRIVATE KEY")])}}), "no private key"},
		{"mismatched key", enc(CredentialsJSON{Production: &CertJSON{PEM: mismatched}}), "does not belong"},
		{"both pem and p12", enc(CredentialsJSON{Development: &CertJSON{PEM: string(certPEM), P12: "AAAA"}}), "either pem or p12"},
		{"p12 not base64", enc(CredentialsJSON{Development: &CertJSON{P12: "%%%"}}), "not base64"},
		{"p12 garbage", enc(CredentialsJSON{Development: &CertJSON{P12: "AAAA"}}), "cannot read p12"},
		{"bad profile env", enc(CredentialsJSON{Profiles: map[string]CertJSON{"x": {PEM: string(certPEM), Env: "staging"}}}), "env must be prod or dev"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ParseCredentials([]byte(c.raw))
			if c.errMatch == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.errMatch) {
				t.Fatalf("got %v, want error containing %q", err, c.errMatch)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatalf("error quotes key material: %v", err)
			}
		})
	}
}

func TestAPNsClassify(t *testing.T) {
	f := func(status int, reason string, want gateway.Kind) {
		t.Helper()
		if got := classify(status, reason); got.Kind != want {
			t.Errorf("classify(%d, %q) = %v, want %v", status, reason, got.Kind, want)
		}
	}
	f(200, "", gateway.KindSent)
	f(410, "Unregistered", gateway.KindInvalidToken)
	f(400, "BadDeviceToken", gateway.KindInvalidToken)
	f(400, "BadTopic", gateway.KindFailed)
	f(413, "PayloadTooLarge", gateway.KindFailed)
	f(403, "ExpiredProviderToken", gateway.KindAuth)
	f(403, "InvalidProviderToken", gateway.KindCredentials)
	f(403, "BadCertificateEnvironment", gateway.KindCredentials)
	f(403, "BadEnvironmentKeyInToken", gateway.KindCredentials)
	f(403, "UnrelatedKeyIdInToken", gateway.KindRetry)
	f(429, "TooManyProviderTokenUpdates", gateway.KindRetry)
	f(503, "Shutdown", gateway.KindRetry)
	f(502, "SomethingNew", gateway.KindRetry)
	f(429, "", gateway.KindRetry)
	f(400, "SomethingNew", gateway.KindFailed)
	if r := classify(418, ""); r.Reason != "status 418" {
		t.Errorf("reason of an empty reply: %q", r.Reason)
	}
}
