package driver

import (
	"encoding/json"
	"fmt"

	"github.com/pushd/pushd/push"
)

// recordCounts is a record's counts.byChannel: the funnels (push.Funnel) as tallies the
// driver's expectations are written in (failed without the dead tokens, which the funnel's
// failed counts and invalidTokens names; no failure classes), and what breaks a funnel's
// invariant, targets = sent + failed + expired + deferred + pending.
type recordCounts struct {
	ByChannel map[string]push.Tally
	Broken    []string
}

func (c *recordCounts) UnmarshalJSON(b []byte) error {
	var in struct {
		ByChannel map[string]push.Funnel `json:"byChannel"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	c.ByChannel = make(map[string]push.Tally, len(in.ByChannel))
	c.Broken = nil
	for ch, f := range in.ByChannel {
		c.ByChannel[ch] = push.Tally{Targets: f.Targets, Sent: f.Sent, Failed: f.Failed - f.InvalidTokens,
			Expired: f.Expired, Deferred: f.Deferred, InvalidTokens: f.InvalidTokens, Arrivals: f.Arrived}
		if f.Targets != f.Sent+f.Failed+f.Expired+f.Deferred+f.Pending || f.Pending < 0 || f.Arrived > f.Sent {
			c.Broken = append(c.Broken, fmt.Sprintf("%s %+v", ch, f))
		}
	}
	return nil
}

// funnelProblems says what in rec's funnel is wrong once its push is done: a broken invariant,
// or targets still pending.
func (rec *record) funnelProblems() []string {
	var out []string
	for _, b := range rec.Counts.Broken {
		out = append(out, fmt.Sprintf("record %s: funnel of channel %s: targets != sent + failed + expired + deferred + pending", rec.ObjectID, b))
	}
	if rec.Status == push.StatusDone && rec.Pending != 0 {
		out = append(out, fmt.Sprintf("record %s: done with %d targets pending", rec.ObjectID, rec.Pending))
	}
	return out
}
