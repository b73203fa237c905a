package wire

import (
	"strings"
	"testing"
)

// TestWireHonorParamsRefused: a push to honor devices whose data.honor importance or
// target_user_type Honor would refuse gets a clear error at intake instead of failing at the
// gateway; valid ones are accepted.
func TestWireHonorParamsRefused(t *testing.T) {
	ok := `{"device_type":"android","device_ids":["r"],"vendor":"honor","data":{"alert":"x","honor":{"importance":"LOW","target_user_type":1}}}`
	if _, perr := DecodePushDevices([]byte(ok), cn, "", testNow); perr != nil {
		t.Fatalf("valid data.honor refused: %v", perr)
	}
	for _, c := range []struct{ body, want string }{
		{`{"device_type":"android","device_ids":["r"],"vendor":"honor","data":{"alert":"x","honor":{"importance":"HIGH"}}}`, "importance must be NORMAL"},
		{`{"device_type":"android","device_ids":["r"],"vendor":"honor","data":{"alert":"x","honor":{"target_user_type":3}}}`, "target_user_type must be 0 or 1"},
	} {
		if _, perr := DecodePushDevices([]byte(c.body), cn, "", testNow); perr == nil || !strings.Contains(perr.Message, c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.body, perr, c.want)
		}
	}
}
