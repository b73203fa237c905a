package wire

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestWireChannelPolicy: channel_policy (a pushd extension) takes the four policies on both
// push endpoints; any other value or type is refused naming it, and absent means "" (the
// app's setting).
func TestWireChannelPolicy(t *testing.T) {
	for _, p := range []string{push.PolicyVendor, push.PolicyOwnFirst, push.PolicyVendorFirst, push.PolicyOwnOnly} {
		r, perr := DecodePush([]byte(`{"data":{"alert":"x"},"channel_policy":"`+p+`"}`), push.EditionChina, "", testNow)
		if perr != nil || r.ChannelPolicy != p {
			t.Errorf("push %s: %+v, %v", p, r, perr)
		}
		d, perr := DecodePushDevices([]byte(`{"data":{"alert":"x"},"device_type":"android","device_ids":["a"],"channel_policy":"`+p+`"}`), push.EditionChina, "", testNow)
		if perr != nil || d.ChannelPolicy != p {
			t.Errorf("devices %s: %+v, %v", p, d, perr)
		}
	}
	if r, perr := DecodePush([]byte(`{"data":{"alert":"x"}}`), push.EditionChina, "", testNow); perr != nil || r.ChannelPolicy != "" {
		t.Errorf("absent: %+v, %v", r, perr)
	}
	for _, v := range []string{`"own"`, `"OWN_FIRST"`, `""`, `1`, `["own_first"]`} {
		_, perr := DecodePush([]byte(`{"data":{"alert":"x"},"channel_policy":`+v+`}`), push.EditionChina, "", testNow)
		if perr == nil || !strings.Contains(perr.Message, "channel_policy") {
			t.Errorf("channel_policy %s: %v, want an error naming it", v, perr)
		}
	}
}
