package vendor

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestVendorProfilesRoute: a delivery's route names its profile (the default one when it names
// none), built when the credentials load so that Route, asked for every delivery, allocates
// nothing; a profile the app has not configured is refused with its name.
func TestVendorProfilesRoute(t *testing.T) {
	p, err := LoadProfiles("mi", []byte(`{"_default":{"k":1},"vip":{"k":2}}`), func(raw []byte) (string, error) { return string(raw), nil })
	if err != nil {
		t.Fatal(err)
	}
	d := &push.Delivery{}
	for _, c := range []struct{ profile, want string }{{"", "profile/" + push.DefaultProfile}, {"vip", "profile/vip"}} {
		d.Target.Profile = c.profile
		var got string
		allocs := testing.AllocsPerRun(100, func() { got, err = p.Route(d) })
		if err != nil || got != c.want {
			t.Fatalf("profile %q: Route = %q, %v; want %q", c.profile, got, err, c.want)
		}
		if allocs != 0 {
			t.Errorf("profile %q: Route allocates %.0f times per call, want 0", c.profile, allocs)
		}
		if cfg, err := p.Get(got); err != nil || cfg == "" {
			t.Errorf("Get(%q) = %q, %v", got, cfg, err)
		}
	}
	d.Target.Profile = "missing"
	if _, err := p.Route(d); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("Route of an unconfigured profile: %v, want an error naming it", err)
	}
}
