package fanout

import (
	"strings"

	"github.com/pushd/pushd/push"
)

// Delivery channels by index, so the hot path tallies into an array instead of a map.
var channelNames = [...]string{
	push.ChannelAPNs, push.ChannelDirect, push.ChannelFCM, push.ChannelMi,
	push.ChannelHMS, push.ChannelMz, push.ChannelVivo, push.ChannelOppo, push.ChannelHonor,
}

const nChannels = len(channelNames)

// deliveryChannel is where fan-out sends a target of app: the one place a push's targets are
// routed, which the worker's scan and the dry run (Audience) both call, so a dry run counts
// each target on the channel a real push would use.
func deliveryChannel(rt *push.Route, app *push.App) string {
	return rt.DeliveryChannel(app.Settings.Edition)
}

// channelIndex maps a delivery channel to its index; unknown channels (none today) land on
// the own channel's slot rather than being lost.
func channelIndex(ch string) uint8 {
	switch ch {
	case push.ChannelAPNs:
		return 0
	case push.ChannelDirect:
		return 1
	case push.ChannelFCM:
		return 2
	case push.ChannelMi:
		return 3
	case push.ChannelHMS:
		return 4
	case push.ChannelMz:
		return 5
	case push.ChannelVivo:
		return 6
	case push.ChannelOppo:
		return 7
	case push.ChannelHonor:
		return 8
	}
	return 1
}

// tally is a task's counts by channel index.
type tally [nChannels]push.Tally

func (t *tally) add(o *tally) {
	for i := range t {
		t[i].Add(o[i])
	}
}

// count adds one target with outcome o on channel ch; reason is a failure's reason (its class
// goes to FailedBy, FailureClass).
func (t *tally) count(ch uint8, o push.Outcome, reason string) {
	x := &t[ch]
	x.Targets++
	switch o {
	case push.OutcomeSent:
		x.Sent++
	case push.OutcomeInvalidToken:
		x.InvalidTokens++
	case push.OutcomeExpired:
		x.Expired++
	case push.OutcomeQueued: // the own-channel gateway counts it (sender/direct)
	case push.OutcomeDeferred: // a vendor quota holds it (quota.go): Deferrals ends it
		x.Deferred++
	default:
		x.Fail(FailureClass(reason))
	}
}

func (t *tally) isZero() bool {
	for i := range t {
		if !t[i].IsZero() {
			return false
		}
	}
	return true
}

// FailureClass maps a failure's reason (the text the record's errors list) to its class in
// the funnel's failedBy: a small fixed set (push.Fail*), so that a dashboard can sum it.
func FailureClass(reason string) string {
	switch {
	case reason == ReasonDailyVolume:
		return push.FailDailyVolume
	case reason == push.ReasonDailyCap:
		return push.FailDailyCap
	case reason == push.ReasonQuietHours:
		return push.FailQuietHours
	case strings.HasPrefix(reason, "credentials rejected"):
		return push.FailCredentials
	case strings.HasPrefix(reason, "gateway unavailable"):
		return push.FailUnavailable
	case strings.Contains(reason, "quota"):
		return push.FailQuota
	case strings.HasSuffix(reason, "credentials configured"), strings.HasPrefix(reason, "invalid ") && strings.Contains(reason, " credentials"),
		strings.Contains(reason, "not configured"), strings.Contains(reason, "not available"),
		strings.HasPrefix(reason, "cannot build "), reason == "app not found":
		return push.FailConfig
	case strings.HasPrefix(reason, "cannot render"):
		return push.FailPayload
	case reason == "canceled", reason == "sender closed":
		return push.FailCancelled
	}
	return push.FailRejected
}

func (t *tally) counts() push.Counts {
	c := push.Counts{}
	for i := range t {
		if !t[i].IsZero() {
			c[channelNames[i]] = t[i]
		}
	}
	return c
}

func tallyFrom(c push.Counts) tally {
	var t tally
	for ch, v := range c {
		t[channelIndex(ch)].Add(v)
	}
	return t
}

func (t *tally) total() push.Tally {
	var s push.Tally
	for i := range t {
		s.Add(t[i])
	}
	return s
}
