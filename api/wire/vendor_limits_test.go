package wire

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestWireVendorLimits: a devices push whose payload breaks its vendor's limit is refused
// with code 1 and the reason, while a query push with the same data is accepted (fan-out fails
// that vendor's targets with the reason, docs/decisions.md); a data.<vendor> parameter the
// vendor refuses is a bad request on both endpoints, as vivo pushMode was.
func TestWireVendorLimits(t *testing.T) {
	big := `"k":"` + strings.Repeat("x", 1100) + `"`
	cases := []struct {
		vendor, data, reason string
		queryOK              bool
	}{
		{"vivo", `{"alert":"a",` + big + `}`, "over vivo's limit of 1024", true},
		{"meizu", `{"alert":"a","mz":{"clickType":2}}`, "data.mz clickType 2 needs a url", false},
		{"mz", `{"alert":"a","mz":{"notifyKey":"123456789"}}`, "notifyKey must be 1 to 8", false},
		{"vivo", `{"alert":"a","vivo":{"pushMode":3}}`, "pushMode must be 0", false},
		{"HMS", `{"alert":"a","hms":{"target_user_type":2}}`, "target_user_type must be 0 or 1", false},
	}
	for _, c := range cases {
		body := `{"device_type":"android","device_ids":["r1"],"vendor":"` + c.vendor + `","data":` + c.data + `}`
		_, perr := DecodePushDevices([]byte(body), cn, "", testNow)
		if perr == nil || perr.Code != push.CodeValidation || !strings.Contains(perr.Message, c.reason) {
			t.Errorf("devices push to %s with %s: %v, want code 1 containing %q", c.vendor, c.data, perr, c.reason)
		}
		_, perr = DecodePush([]byte(`{"data":`+c.data+`}`), cn, "", testNow)
		if c.queryOK && perr != nil {
			t.Errorf("query push with %s refused: %v", c.data, perr)
		}
		if !c.queryOK && (perr == nil || perr.Code != push.CodeValidation || !strings.Contains(perr.Message, c.reason)) {
			t.Errorf("query push with %s: %v, want code 1 containing %q", c.data, perr, c.reason)
		}
	}
	// The same data to a vendor whose limit it keeps goes out.
	body := `{"device_type":"android","device_ids":["r1"],"vendor":"mi","data":{"alert":"a",` + big + `}}`
	if _, perr := DecodePushDevices([]byte(body), cn, "", testNow); perr != nil {
		t.Fatalf("devices push to mi: %v", perr)
	}
}
