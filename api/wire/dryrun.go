package wire

import (
	"bytes"

	"github.com/pushd/pushd/push"
)

// dryRun reads the pushd extension dry_run: true or false (absent or null: false).
func (f fields) dryRun() (bool, *push.Error) {
	raw, ok := f["dry_run"]
	if !ok {
		return false, nil
	}
	switch {
	case bytes.Equal(raw, []byte("true")):
		return true, nil
	case bytes.Equal(raw, []byte("false")):
		return false, nil
	}
	return false, typeError("dry_run", "true or false")
}

// DeliveryChannels lists the delivery channels an app of edition ed has: apns, the own
// channel (direct), and the edition's vendors. A dry run shows a payload for each.
func DeliveryChannels(ed push.Edition) []string {
	return append([]string{push.ChannelAPNs, push.ChannelDirect}, edition(ed).vendors()...)
}
