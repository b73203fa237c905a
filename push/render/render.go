// Package render turns a push's data object into the gateway-ready payload of one delivery
// channel. It owns the per-platform selection rules (which attributes of `data` reach which
// platform, how a platform object overrides the defaults) and the payload shapes handed to the
// senders: the APNs JSON payload, the FCM message without its token, the own channel's frame
// data, and a neutral JSON shape for the vendor senders (VendorBody).
//
// Render is pure and safe for concurrent use. A Cache renders each channel of one job at most
// once and is safe for concurrent use; the *push.Message values it returns are shared and must
// be treated as read-only.
package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
)

// Errors Render returns, wrapped with the channel. Fan-out counts the targets of that channel
// failed (ErrExpired: expired) and uses the text as the reason; match them with errors.Is.
var (
	// ErrNoPassThrough: a silent (pass-through) push to a vendor without pass-through messages
	// (oppo, vivo, mz). The original service drops it and notes the error on the push record.
	ErrNoPassThrough = errors.New("silent pushes are not supported by this vendor")
	// ErrNoContent: after the platform override there is nothing to show on this platform
	// (no alert; for iOS also no content-available=1 and no aps object).
	ErrNoContent = errors.New("no alert for this platform")
	// ErrAlertObject: the iOS alert object reached an Android platform.
	ErrAlertObject = errors.New("the alert object form is for iOS only")
	// ErrExpired: the push's expiry has passed.
	ErrExpired = errors.New("the push expired")
	// ErrTooLarge: the rendered payload exceeds the gateway's limit.
	ErrTooLarge = errors.New("the rendered payload is too large")
	// ErrReservedKey: a custom data key the gateway reserves (FCM: from, notification,
	// message_type, google*, gcm*).
	ErrReservedKey = errors.New("a data key is reserved by the gateway")
	// ErrBadData: data that the API decoder would have refused (not an object, wrong types).
	ErrBadData = errors.New("malformed push data")
	// ErrUnknownChannel: a channel that is none of the push.Channel* constants.
	ErrUnknownChannel = errors.New("unknown delivery channel")
)

// Payload limits of the gateways (gateways.md §1.4): APNs 4096 bytes, 5120 for VoIP.
const (
	maxAPNsPayload     = 4096
	maxAPNsVoIPPayload = 5120
	// maxFCMTTL is FCM's maximum android.ttl, 4 weeks (gateways.md §2.2).
	maxFCMTTL = 28 * 24 * time.Hour
)

// Options is what a rendering needs from the job besides its data.
type Options struct {
	Prod                bool      // APNs production environment (does not change the body)
	Expiry              time.Time // zero: no expiry
	Topic               string    // the request's topic (iOS)
	TeamID              string    // the request's apns_team_id (iOS)
	NotificationChannel string    // the request's _notificationChannel (Android), the default
	NotificationID      string    // the push's notification id (vendor bodies carry it)
	// MessageClass is the push's resolved message class (push.MessageClassOf): marketing
	// renders APNs interruption-level passive and FCM normal priority, and the vendor body
	// carries it for the vendor senders' classification fields. "" is push.ClassSystem.
	MessageClass string
	// Now is the render time, from which relative TTLs (FCM android.ttl) are computed;
	// zero means time.Now().
	Now time.Time
	// Members are data's members when the caller has already decoded data as a JSON object
	// (intake checks several channels of one request); nil: Render decodes data. Render
	// does not modify them.
	Members map[string]json.RawMessage
	// badged receives the Badged template of an APNs payload whose badge is "Increment"
	// (RenderBadged).
	badged **Badged
}

// OptionsFor returns the options of a job.
func OptionsFor(job *push.Job) Options {
	return Options{
		Prod:                job.Prod != "dev",
		Expiry:              job.ExpiresAt,
		Topic:               job.Topic,
		TeamID:              job.APNsTeamID,
		NotificationChannel: job.NotificationChannel,
		NotificationID:      job.NotificationID,
		MessageClass:        job.MessageClass,
	}
}

// Platform keys of a push's data object (spec "Per-platform override inside data").
const (
	KeyIOS     = "ios"
	KeyAndroid = "android"
)

// PlatformKeys lists every per-platform key of data, in both editions.
var PlatformKeys = []string{KeyIOS, KeyAndroid, push.ChannelMi, push.ChannelHMS, push.ChannelMz,
	push.ChannelVivo, push.ChannelOppo, push.ChannelHonor, push.ChannelFCM}

// IsPlatformKey says whether k is a per-platform key of data.
func IsPlatformKey(k string) bool { return slices.Contains(PlatformKeys, k) }

// PlatformKey maps a delivery channel to the data key of its platform object:
// apns→ios, direct→android, the vendor channels and fcm to themselves; "" when unknown.
func PlatformKey(channel string) string {
	switch channel {
	case push.ChannelAPNs:
		return KeyIOS
	case push.ChannelDirect:
		return KeyAndroid
	case push.ChannelFCM, push.ChannelMi, push.ChannelHMS, push.ChannelMz, push.ChannelVivo, push.ChannelOppo, push.ChannelHonor:
		return channel
	}
	return ""
}

// Render renders data for one delivery channel. The platform object of the channel (data.ios
// for apns, data.android for direct, data.<vendor> otherwise) is merged shallowly over the
// top-level attributes: its keys win, a null value removes a default, and the other platforms'
// objects are dropped. Attributes known to belong only to another platform are dropped too;
// custom attributes reach every platform.
func Render(data json.RawMessage, channel string, opts Options) (*push.Message, error) {
	msg, err := render(data, channel, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot render the %s payload: %w", channel, err)
	}
	return msg, nil
}

func render(data json.RawMessage, channel string, opts Options) (*push.Message, error) {
	key := PlatformKey(channel)
	if key == "" {
		return nil, ErrUnknownChannel
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	if !opts.Expiry.IsZero() && !opts.Expiry.After(now) {
		return nil, ErrExpired
	}
	top := attrs(opts.Members)
	if top == nil {
		var err error
		if top, err = decodeObject(data); err != nil {
			return nil, err
		}
	}
	m, vendorObj, err := view(top, key)
	if err != nil {
		return nil, err
	}
	switch channel {
	case push.ChannelAPNs:
		return renderIOS(m, opts)
	case push.ChannelDirect:
		return renderDirect(m, opts)
	case push.ChannelFCM:
		return renderFCM(m, opts, now)
	default:
		return renderVendor(m, vendorObj, channel, opts)
	}
}

// attrs is one decoded JSON object: its members as raw JSON.
type attrs map[string]json.RawMessage

// view returns the attributes one platform sees: the top-level ones (platform objects left
// out) with the platform's own object merged over them, and that object itself.
func view(top attrs, key string) (attrs, attrs, error) {
	if plainTop(top) {
		return top, nil, nil // nothing to leave out, no platform object: top as it is (renderers only read it)
	}
	m := make(attrs, len(top))
	for k, v := range top {
		if !IsPlatformKey(k) && !isNull(v) {
			m[k] = v
		}
	}
	raw, ok := top[key]
	if !ok || isNull(raw) {
		return m, nil, nil
	}
	own, err := decodeObject(raw)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range own {
		switch {
		case IsPlatformKey(k):
		case isNull(v):
			delete(m, k)
		default:
			m[k] = v
		}
	}
	return m, own, nil
}

// plainTop says whether top holds no platform object and no null member, so that every
// platform's view of it is top itself.
func plainTop(top attrs) bool {
	for k, v := range top {
		if IsPlatformKey(k) || isNull(v) {
			return false
		}
	}
	return true
}

func decodeObject(raw json.RawMessage) (attrs, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, ErrBadData
	}
	var m attrs
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, ErrBadData
	}
	return m, nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// str reads a string attribute: ok is false when absent; err when it is not a string.
func (m attrs) str(k string) (s string, ok bool, err error) {
	raw, ok := m[k]
	if !ok {
		return "", false, nil
	}
	s, ok = decodeString(raw)
	if !ok {
		return "", false, ErrBadData
	}
	return s, true, nil
}

// decodeString decodes raw, a JSON string token; ok is false when it is not one. A plain token
// is read without encoding/json.
func decodeString(raw json.RawMessage) (string, bool) {
	if s, ok := jsondoc.PlainToken(raw); ok {
		return s, true
	}
	var esc string // not the result above: taking its address would move it to the heap
	if json.Unmarshal(raw, &esc) != nil {
		return "", false
	}
	return esc, true
}

// isPlainString says whether raw is a JSON string token with no escape, no inner quote and no
// control character (its UTF-8 unchecked): valid JSON as it is, and already compact.
func isPlainString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c == '"' || c == '\\' || c < 0x20 {
			return false
		}
	}
	return true
}

// num reads a number attribute.
func (m attrs) num(k string) (f float64, ok bool, err error) {
	raw, ok := m[k]
	if !ok {
		return 0, false, nil
	}
	if err := json.Unmarshal(raw, &f); err != nil || math.IsNaN(f) {
		return 0, false, ErrBadData
	}
	return f, true, nil
}

// boolean reads a boolean attribute.
func (m attrs) boolean(k string) (b bool, ok bool, err error) {
	raw, ok := m[k]
	if !ok {
		return false, false, nil
	}
	switch string(raw) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	var v bool // its own variable, as in str
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, false, ErrBadData
	}
	return v, true, nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

func isString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}
