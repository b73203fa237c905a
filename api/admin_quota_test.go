package api

import (
	"context"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestAdminVendorQuotas: an app's vendor budgets (settings.vendorQuotas, issue 20 item 2) are
// set through the admin API, stored and shown; a negative or oversized quota, a bad per-second
// limit, an unknown time zone, vendor or field is refused with 400 code 1 and changes nothing;
// {} clears them.
func TestAdminVendorQuotas(t *testing.T) {
	e := newEnv(t)
	path, h := "/admin/apps/"+e.app.ID, e.adminHeaders()
	want := push.VendorQuotas{Vivo: push.VendorQuota{Daily: 500, MarketingDaily: 100, PerSecond: 300},
		Oppo: push.VendorQuota{Daily: 2000, TimeZone: "UTC"}}
	r := e.do("PUT", path, `{"settings":{"vendorQuotas":{"vivo":{"daily":500,"marketingDaily":100,"perSecond":300},"oppo":{"daily":2000,"timeZone":"UTC"}}}}`, h...)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"vendorQuotas":{"oppo":{"daily":2000,"timeZone":"UTC"},"vivo":{"daily":500,"marketingDaily":100,"perSecond":300}}`) {
		t.Fatalf("set quotas: %d %s", r.Status, r.Body)
	}
	got, err := e.st.GetApp(context.Background(), e.app.ID)
	if err != nil || got.Settings.VendorQuotas != want {
		t.Fatalf("stored quotas %+v, %v", got.Settings.VendorQuotas, err)
	}
	for _, bad := range []string{
		`{"settings":{"vendorQuotas":{"vivo":{"daily":-1}}}}`,
		`{"settings":{"vendorQuotas":{"vivo":{"daily":100000000000}}}}`,
		`{"settings":{"vendorQuotas":{"vivo":{"marketingDaily":-5}}}}`,
		`{"settings":{"vendorQuotas":{"vivo":{"perSecond":-1}}}}`,
		`{"settings":{"vendorQuotas":{"vivo":{"perSecond":2000000}}}}`,
		`{"settings":{"vendorQuotas":{"vivo":{"timeZone":"Mars/Olympus"}}}}`,
		`{"settings":{"vendorQuotas":{"apns":{"daily":10}}}}`,
		`{"settings":{"vendorQuotas":{"vivo":{"weekly":10}}}}`,
		`{"settings":{"vendorQuotas":{"vivo":{"daily":"many"}}}}`,
		`{"settings":{"vendorQuotas":{"vivo":{"daily":1.5}}}}`,
	} {
		if r := e.do("PUT", path, bad, h...); r.Status != 400 || r.Code(t) != int(push.CodeValidation) {
			t.Errorf("%s: %d %s, want 400 code %d", bad, r.Status, r.Body, push.CodeValidation)
		}
	}
	if got, _ := e.st.GetApp(context.Background(), e.app.ID); got.Settings.VendorQuotas != want {
		t.Fatalf("a refused change changed the quotas: %+v", got.Settings.VendorQuotas)
	}
	if r := e.do("PUT", path, `{"settings":{"vendorQuotas":{}}}`, h...); r.Status != 200 || strings.Contains(string(r.Body), "vendorQuotas") {
		t.Fatalf("clear quotas: %d %s", r.Status, r.Body)
	}
	if got, _ := e.st.GetApp(context.Background(), e.app.ID); got.Settings.VendorQuotas != (push.VendorQuotas{}) {
		t.Fatalf("quotas after {}: %+v", got.Settings.VendorQuotas)
	}
}
