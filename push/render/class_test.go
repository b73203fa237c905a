package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestRenderMessageClass: a marketing push renders APNs interruption-level passive (unless
// data sets a level) and FCM normal priority; a system push renders neither; every vendor
// body carries the class for its sender.
func TestRenderMessageClass(t *testing.T) {
	data := json.RawMessage(`{"alert":"sale","title":"t"}`)
	render := func(ch, class string, d json.RawMessage) *push.Message {
		t.Helper()
		m, err := Render(d, ch, Options{MessageClass: class})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if b := string(render(push.ChannelAPNs, push.ClassMarketing, data).Body); !strings.Contains(b, `"interruption-level":"passive"`) {
		t.Errorf("apns marketing: %s, want interruption-level passive", b)
	}
	if b := string(render(push.ChannelAPNs, push.ClassSystem, data).Body); strings.Contains(b, "interruption-level") {
		t.Errorf("apns system: %s has an interruption-level", b)
	}
	own := json.RawMessage(`{"alert":"sale","aps":{"interruption-level":"time-sensitive"}}`)
	if b := string(render(push.ChannelAPNs, push.ClassMarketing, own).Body); !strings.Contains(b, `"interruption-level":"time-sensitive"`) {
		t.Errorf("apns marketing with data's level: %s, want data's level kept", b)
	}
	bg := json.RawMessage(`{"content-available":1}`)
	if b := string(render(push.ChannelAPNs, push.ClassMarketing, bg).Body); strings.Contains(b, "interruption-level") {
		t.Errorf("apns background marketing: %s has an interruption-level", b)
	}
	if m := render(push.ChannelFCM, push.ClassMarketing, data); m.Priority != 5 || !strings.Contains(string(m.Body), `"priority":"normal"`) {
		t.Errorf("fcm marketing: priority %d body %s, want normal", m.Priority, m.Body)
	}
	if m := render(push.ChannelFCM, push.ClassSystem, data); m.Priority != 10 || !strings.Contains(string(m.Body), `"priority":"high"`) {
		t.Errorf("fcm system: priority %d body %s, want high", m.Priority, m.Body)
	}
	for _, ch := range []string{push.ChannelMi, push.ChannelHMS, push.ChannelHonor, push.ChannelVivo, push.ChannelOppo, push.ChannelMz} {
		var vb VendorBody
		if err := json.Unmarshal(render(ch, push.ClassMarketing, data).Body, &vb); err != nil || vb.MessageClass != push.ClassMarketing {
			t.Errorf("%s: vendor body class %q, %v", ch, vb.MessageClass, err)
		}
	}
}
