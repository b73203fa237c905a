package fanout

import (
	"testing"

	"github.com/pushd/pushd/push"
)

// TestTallyHonorHasItsOwnSlot: honor deliveries are counted as honor, not on the own
// channel's slot where unknown channels land.
func TestTallyHonorHasItsOwnSlot(t *testing.T) {
	var tl tally
	tl.count(channelIndex(push.ChannelHonor), push.OutcomeSent, "")
	c := tl.counts()
	if c[push.ChannelHonor].Sent != 1 || c[push.ChannelDirect].Targets != 0 {
		t.Fatalf("counts %+v, want one honor success", c)
	}
}
