package render

import (
	"encoding/json"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestRenderHonorPlatformKey: data.honor is Honor's platform object. It overrides the defaults
// for the honor channel only, and hms does not see it (nor honor data.hms).
func TestRenderHonorPlatformKey(t *testing.T) {
	if !IsPlatformKey("honor") || PlatformKey(push.ChannelHonor) != "honor" {
		t.Fatalf("honor is not a platform key")
	}
	data := json.RawMessage(`{"alert":"default","honor":{"alert":"for honor","k":1},"hms":{"alert":"for hms"}}`)
	for ch, want := range map[string]VendorBody{
		push.ChannelHonor: {Alert: "for honor", Custom: json.RawMessage(`{"k":1}`)},
		push.ChannelHMS:   {Alert: "for hms"},
		push.ChannelMi:    {Alert: "default"},
	} {
		m, err := Render(data, ch, Options{Now: testNow})
		if err != nil {
			t.Fatalf("%s: %v", ch, err)
		}
		var got VendorBody
		if err := json.Unmarshal(m.Body, &got); err != nil {
			t.Fatal(err)
		}
		if got.Alert != want.Alert || string(got.Custom) != string(want.Custom) {
			t.Errorf("%s: got %s, want alert %q custom %s", ch, m.Body, want.Alert, want.Custom)
		}
	}
	// Honor has pass-through (data) messages, as HMS does.
	m, err := Render(json.RawMessage(`{"alert":"x","silent":true}`), push.ChannelHonor, Options{Now: testNow})
	if err != nil || !m.Silent {
		t.Fatalf("silent honor: %v, %v", m, err)
	}
	c := NewCache(&push.Job{Data: data})
	if m, err := c.Get(push.ChannelHonor); err != nil || m.Channel != push.ChannelHonor {
		t.Fatalf("cache honor: %v, %v", m, err)
	}
}
