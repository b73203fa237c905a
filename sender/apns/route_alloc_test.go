package apns

import (
	"encoding/json"
	"testing"

	"github.com/pushd/pushd/loadtest/sim"
)

// TestAPNsRouteAllocatesNothing: the dispatcher asks Route for every delivery, so Route
// answers from strings built when the credentials load (team, certificate, profile routes,
// both environments), never one per call. The answers themselves are TestAPNsRouteTeamRule's.
func TestAPNsRouteAllocatesNothing(t *testing.T) {
	s := newSim(t, sim.APNsConfig{})
	team, err := Load(tokenCreds(t, s, "TEAMAAAAAA", "TEAMBBBBBB"))
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := sim.NewClientCert("com.example.app")
	certPEM, _ := sim.ClientCertPEM(cert)
	raw, _ := json.Marshal(CredentialsJSON{
		Production:  &CertJSON{PEM: string(certPEM)},
		Development: &CertJSON{PEM: string(certPEM)},
		Profiles:    map[string]CertJSON{"enterprise": {PEM: string(certPEM)}},
	})
	certs, err := Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		c       *Credentials
		team    string
		profile string
		want    [2]string // dev, prod
	}{
		{"team", team, "TEAMBBBBBB", "", [2]string{"team/TEAMBBBBBB/dev", "team/TEAMBBBBBB/prod"}},
		{"certificate", certs, "", "", [2]string{"cert/dev", "cert/prod"}},
		{"profile", certs, "", "enterprise", [2]string{"profile/enterprise/dev", "profile/enterprise/prod"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := delivery(devToken(0))
			d.Target.TeamID, d.Target.Profile = c.team, c.profile
			for i, prod := range []bool{false, true} {
				d.Prod = prod
				var got string
				allocs := testing.AllocsPerRun(100, func() { got, err = c.c.Route(d) })
				if err != nil || got != c.want[i] {
					t.Fatalf("prod=%v: got %q, %v; want %q", prod, got, err, c.want[i])
				}
				if allocs != 0 {
					t.Errorf("prod=%v: Route allocates %.0f times per call, want 0", prod, allocs)
				}
			}
		})
	}
}

// TestAPNsConfigDefaults: APNs's pool may open enough connections of 500 streams to keep all of
// fan-out's deliveries in flight at a gateway 20 ms away (its defaults: 4 tasks × 8 batches ×
// 100 = 3,200); a configured MaxConns stays.
func TestAPNsConfigDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.MaxConns != DefaultMaxConns || c.StreamsPerConn != 500 || c.MaxConns*c.StreamsPerConn < 3200 {
		t.Errorf("defaults: %d connections × %d streams, want %d × 500, at least 3,200 in flight", c.MaxConns, c.StreamsPerConn, DefaultMaxConns)
	}
	c = Config{}
	c.MaxConns = 3
	if got := c.WithDefaults().MaxConns; got != 3 {
		t.Errorf("a configured MaxConns of 3 became %d", got)
	}
}
