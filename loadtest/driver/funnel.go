package driver

import (
	"encoding/json"

	"github.com/pushd/pushd/push"
)

// channelTallies decodes a record's counts.byChannel funnels (push.Funnel) into the tallies
// the driver's expectations are written in: failed without the dead tokens (the funnel's
// failed counts them, invalidTokens names them) and no failure classes.
type channelTallies map[string]push.Tally

func (c *channelTallies) UnmarshalJSON(b []byte) error {
	var fs map[string]push.Funnel
	if err := json.Unmarshal(b, &fs); err != nil {
		return err
	}
	*c = make(channelTallies, len(fs))
	for ch, f := range fs {
		(*c)[ch] = push.Tally{Targets: f.Targets, Sent: f.Sent, Failed: f.Failed - f.InvalidTokens,
			Expired: f.Expired, Deferred: f.Deferred, InvalidTokens: f.InvalidTokens, Arrivals: f.Arrived}
	}
	return nil
}
