package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestRenderVendorLimits: each vendor's payload limit refuses a payload just over it and
// takes one at it; data.<vendor> parameters the vendor refuses are ErrVendorParam. Texts are
// not limits (the senders cut them).
func TestRenderVendorLimits(t *testing.T) {
	custom := func(n int) string { return `{"alert":"a","k":"` + strings.Repeat("x", n) + `"}` } // custom {"k":"x…"} is n+8 bytes
	cases := []struct {
		name, channel, data string
		want                error
	}{
		{"mi at 4095", push.ChannelMi, custom(maxMiPayload - 8), nil},
		{"mi over", push.ChannelMi, custom(maxMiPayload - 7), ErrTooLarge},
		{"mi silent counts alert", push.ChannelMi, `{"alert":"` + strings.Repeat("y", 4000) + `","silent":true,"k":"` + strings.Repeat("x", 100) + `"}`, ErrTooLarge},
		{"hms under", push.ChannelHMS, custom(3000), nil},
		{"hms escaping counts", push.ChannelHMS, `{"alert":"a","k":"` + strings.Repeat(`\"`, 1000) + `"}`, ErrTooLarge},
		{"hms title doubles the alert", push.ChannelHMS, `{"alert":"` + strings.Repeat("y", 1950) + `"}`, ErrTooLarge},
		{"vivo at 1024 characters", push.ChannelVivo, `{"alert":"a","k":"` + strings.Repeat("语", 1016) + `"}`, nil},
		{"vivo over", push.ChannelVivo, `{"alert":"a","k":"` + strings.Repeat("语", 1017) + `"}`, ErrTooLarge},
		{"oppo over", push.ChannelOppo, custom(3993), ErrTooLarge},
		{"oppo at 4000", push.ChannelOppo, custom(3992), nil},
		{"long alert is no limit", push.ChannelMz, `{"alert":"` + strings.Repeat("语", 1000) + `"}`, nil},
		{"mz clickType", push.ChannelMz, `{"alert":"a","mz":{"clickType":3}}`, ErrVendorParam},
		{"mz clickType 2 without url", push.ChannelMz, `{"alert":"a","mz":{"clickType":2}}`, ErrVendorParam},
		{"mz clickType 1 with activity", push.ChannelMz, `{"alert":"a","mz":{"clickType":1,"activity":"com.x.Main"}}`, nil},
		{"mz notifyKey", push.ChannelMz, `{"alert":"a","mz":{"notifyKey":"way-too-long"}}`, ErrVendorParam},
		{"mz url type", push.ChannelMz, `{"alert":"a","mz":{"url":5}}`, ErrVendorParam},
		{"vivo pushMode", push.ChannelVivo, `{"alert":"a","vivo":{"pushMode":2}}`, ErrVendorParam},
		{"hms target_user_type", push.ChannelHMS, `{"alert":"a","hms":{"target_user_type":"1"}}`, ErrVendorParam},
		{"top-level clickType is custom", push.ChannelMz, `{"alert":"a","clickType":9}`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render(json.RawMessage(c.data), c.channel, testOpts())
			if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("Render = %v, want %v", err, c.want)
			}
			if err != nil && !strings.Contains(err.Error(), c.channel) {
				t.Fatalf("error %q does not name %s", err, c.channel)
			}
		})
	}
}
