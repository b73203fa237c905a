package wire

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestWireHonorIsAVendor: data.honor is a platform key of the China edition (it was refused
// as "use data.hms"), and vendor "honor" on /1.1/push/devices targets the honor channel.
func TestWireHonorIsAVendor(t *testing.T) {
	body := `{"data":{"alert":"x","honor":{"title":"t","alert":"h"}}}`
	if _, perr := DecodePush([]byte(body), cn, "", testNow); perr != nil {
		t.Fatalf("data.honor refused: %v", perr)
	}
	if _, perr := DecodePush([]byte(body), intl, "", testNow); perr == nil || !strings.Contains(perr.Message, "not available in the international edition") {
		t.Fatalf("data.honor in the international edition: %v", perr)
	}
	if _, perr := DecodePush([]byte(`{"data":{"alert":"x","honor":"a custom string"}}`), cn, "", testNow); perr == nil {
		t.Fatalf("data.honor that is not an object accepted")
	}
	r, perr := DecodePushDevices([]byte(`{"device_type":"android","device_ids":["r"],"vendor":"Honor","data":{"alert":"x","honor":{"silent":true}}}`), cn, "", testNow)
	if perr != nil {
		t.Fatal(perr)
	}
	if r.Vendor != push.ChannelHonor || r.DeliveryChannel() != push.ChannelHonor {
		t.Fatalf("vendor %q, channel %q, want honor", r.Vendor, r.DeliveryChannel())
	}
	// Content is checked against honor's own object.
	_, perr = DecodePushDevices([]byte(`{"device_type":"android","device_ids":["r"],"vendor":"honor","data":{"alert":"x","honor":{"alert":null}}}`), cn, "", testNow)
	if perr == nil || !strings.Contains(perr.Message, "data.alert is required for honor") {
		t.Fatalf("honor without an alert: %v", perr)
	}
}
