package direct_test

import (
	"context"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/direct"
)

// heldSender is a fake next sender that also answers HeldReason for every delivery.
type heldSender struct{ funcSender }

func (heldSender) HeldReason(context.Context, *push.Delivery) (string, bool) {
	return "vivo 10070 daily quota exceeded", true
}

// TestDirectHandoffPassesHeldReason: fan-out's question about an expired push's delivery
// reaches the next sender when it can answer it (the vendors' quota parks live there); the
// own channel's deliveries and a next sender without the capability answer nothing.
func TestDirectHandoffPassesHeldReason(t *testing.T) {
	vendor := &push.Delivery{Target: push.Target{Channel: push.ChannelVivo, DeviceID: "r1"}}
	own := &push.Delivery{Target: push.Target{Channel: push.ChannelDirect, DeviceID: "i1"}}
	h := direct.NewHandoff(heldSender{}, nil)
	if reason, held := h.HeldReason(context.Background(), vendor); !held || reason != "vivo 10070 daily quota exceeded" {
		t.Fatalf("vendor delivery: %q, %v", reason, held)
	}
	if _, held := h.HeldReason(context.Background(), own); held {
		t.Fatal("an own-channel delivery is held")
	}
	plain := direct.NewHandoff(funcSender(nil), nil)
	if _, held := plain.HeldReason(context.Background(), vendor); held {
		t.Fatal("a next sender without HeldReason holds")
	}
}
