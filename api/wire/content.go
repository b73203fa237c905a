package wire

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
)

// edition answers which delivery channels an app's edition has. An empty edition is the
// China edition, the default of push.DefaultSettings.
type edition push.Edition

func (e edition) international() bool { return push.Edition(e) == push.EditionInternational }

func (e edition) name() string {
	if e.international() {
		return string(push.EditionInternational)
	}
	return string(push.EditionChina)
}

// vendors lists the hybrid-push channels of the edition.
func (e edition) vendors() []string {
	if e.international() {
		return []string{push.ChannelMi, push.ChannelFCM}
	}
	return []string{push.ChannelMi, push.ChannelHMS, push.ChannelMz, push.ChannelVivo, push.ChannelOppo, push.ChannelHonor}
}

func (e edition) has(channel string) bool {
	for _, v := range e.vendors() {
		if v == channel {
			return true
		}
	}
	return false
}

// renderable renders data for channel the way fan-out will, and sorts the outcome: ok
// (a message, or a failure fan-out records per target), noContent, or alertObject.
type verdict uint8

const (
	verdictOK verdict = iota
	verdictNoContent
	verdictAlertObject
	verdictTargetsFail // renders to an error every target of the channel will be failed with
	verdictBug
)

// renderVerdict renders data for channel. members are data's members when the caller has
// decoded them (nil: decoded by render).
func renderVerdict(data json.RawMessage, members map[string]json.RawMessage, channel string, now time.Time) (verdict, error) {
	_, err := render.Render(data, channel, render.Options{Now: now, Members: members})
	switch {
	case err == nil:
		return verdictOK, nil
	case errors.Is(err, render.ErrNoContent):
		return verdictNoContent, err
	case errors.Is(err, render.ErrAlertObject):
		return verdictAlertObject, err
	case errors.Is(err, render.ErrNoPassThrough), errors.Is(err, render.ErrReservedKey), errors.Is(err, render.ErrTooLarge),
		errors.Is(err, render.ErrVendorParam):
		return verdictTargetsFail, err
	default:
		return verdictBug, err
	}
}

// noContentError is the error for data that renders to nothing for the targets.
func noContentError(what string) *push.Error {
	return push.Errorf(push.CodeValidation,
		"data.alert is required for %s (for iOS, content-available 1 or an aps object also does)", what)
}

// checkContentQuery checks that data gives the targets of a query push something to show.
// The candidate platforms are the edition's, narrowed to iOS or Android when where pins
// deviceType by top-level equality. At least one candidate must render; a candidate that
// does not (say data has only data.ios.alert) fails its targets at fan-out, because only the
// query decides which platforms are really targeted. needsIOSOnly reports an alert object
// that would reach an Android candidate.
func checkContentQuery(data json.RawMessage, ed push.Edition, pinned string, now time.Time) (needsIOSOnly bool, perr *push.Error) {
	return checkContentQueryTop(data, nil, ed, pinned, now)
}

// checkContentQueryTop is checkContentQuery given data's members when the caller has them
// (nil: decoded here).
func checkContentQueryTop(data json.RawMessage, top map[string]json.RawMessage, ed push.Edition, pinned string, now time.Time) (needsIOSOnly bool, perr *push.Error) {
	var cands []string
	if pinned != push.DeviceAndroid {
		cands = append(cands, push.ChannelAPNs)
	}
	if pinned != push.DeviceIOS {
		cands = append(cands, push.ChannelDirect)
		cands = append(cands, edition(ed).vendors()...)
	}
	anyOK, alertObject := false, false
	// The neutral-vendor channels (mi, hms, mz, vivo, oppo, honor) all render through the same code,
	// which differs per channel only in the channel's own platform object (data.<channel>) and
	// in whether the channel has pass-through and in its payload limits (ErrNoPassThrough,
	// ErrTooLarge: verdictTargetsFail, which counts here as verdictOK does). So vendors without their own object get the verdict of the first
	// such vendor instead of a render each. It comes first in cands, so a verdictBug names the
	// same channel as rendering them all would. FuzzWireContentQueryMatchesRenderAll holds this
	// against rendering every candidate.
	topOK := top != nil
	if !topOK {
		var err error
		top, err = object(data)
		topOK = err == nil
	}
	var members map[string]json.RawMessage // decoded once for every candidate's render
	if topOK {
		members = top
	}
	var shared struct {
		done bool
		v    verdict
		err  error
	}
	for _, ch := range cands {
		var v verdict
		var err error
		_, own := top[ch]
		if topOK && !own && neutralVendor(ch) {
			if !shared.done {
				shared.v, shared.err = renderVerdict(data, members, ch, now)
				shared.done = true
			}
			v, err = shared.v, shared.err
		} else {
			v, err = renderVerdict(data, members, ch, now)
		}
		switch v {
		case verdictOK, verdictTargetsFail:
			anyOK = true
		case verdictAlertObject:
			alertObject = true
		case verdictBug:
			return false, push.Errorf(push.CodeValidation, "data cannot be rendered for %s: %v", ch, err)
		}
	}
	switch {
	case alertObject && pinned == push.DeviceAndroid:
		return false, IOSOnlyError()
	case !anyOK && alertObject:
		return false, IOSOnlyError()
	case !anyOK:
		return false, noContentError("the targeted platforms")
	}
	return alertObject, nil
}

// neutralVendor says whether channel renders through render's neutral vendor body.
func neutralVendor(channel string) bool {
	switch channel {
	case push.ChannelMi, push.ChannelHMS, push.ChannelMz, push.ChannelVivo, push.ChannelOppo, push.ChannelHonor:
		return true
	}
	return false
}

// checkContentDevices checks that data renders for the one channel of a devices push.
// A silent push to a vendor without pass-through is accepted (ORIGINAL-NOTES §2.4: the
// targets fail and the record says why); other render failures are refused here.
func checkContentDevices(data json.RawMessage, channel string, now time.Time) *push.Error {
	v, err := renderVerdict(data, nil, channel, now)
	switch v {
	case verdictNoContent:
		return noContentError(render.PlatformKey(channel))
	case verdictAlertObject:
		return IOSOnlyError()
	case verdictTargetsFail:
		if errors.Is(err, render.ErrNoPassThrough) {
			return nil
		}
		return push.Errorf(push.CodeValidation, "data cannot be sent to %s: %v", channel, err)
	case verdictBug:
		return push.Errorf(push.CodeValidation, "data cannot be rendered for %s: %v", channel, err)
	}
	return nil
}

// pinnedDeviceType returns the deviceType where pins by top-level equality ("deviceType":
// "ios" or {"$eq":"ios"}), else "".
func pinnedDeviceType(where json.RawMessage) string {
	if len(where) == 0 {
		return ""
	}
	w, err := object(where)
	if err != nil {
		return ""
	}
	raw, ok := w["deviceType"]
	if !ok {
		return ""
	}
	if s, ok := jsondoc.PlainToken(raw); ok {
		return s
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var op map[string]json.RawMessage
	if json.Unmarshal(raw, &op) == nil && len(op) == 1 {
		if json.Unmarshal(op["$eq"], &s) == nil {
			return s
		}
	}
	return ""
}
