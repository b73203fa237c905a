// Package wire owns the JSON shapes of the push requests (POST /1.1/push and
// POST /1.1/push/devices) and their strict decoders: size, shape and type checks of every
// parameter and of the data object, defaults (prod, flow_control), and expiry arithmetic.
// Decoding is pure (no I/O, no clock: the caller passes now) and safe for concurrent use.
// Decoded values never alias the body, so a caller may reuse the body's buffer.
//
// The decisions the spec leaves open are listed in docs/decisions.md, "Push payloads".
package wire

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/pushd/pushd/push"
)

// Limits of the push requests (spec "Limits").
const (
	// MaxBody: a push body's serialized size must be below 4096 bytes (for /1.1/push/devices,
	// its size without device_ids).
	MaxBody = 4096
	// MaxDevicesBody bounds a whole /1.1/push/devices body: the content below MaxBody plus 500
	// device ids of up to 200 characters.
	MaxDevicesBody = MaxBody + MaxDeviceIDs*(200+3)
	// MaxDeviceIDs is the most device_ids one /1.1/push/devices call may list.
	MaxDeviceIDs = 500
	// MaxIDLength bounds notification_id and req_id (letters and digits only).
	MaxIDLength = 16
	// MinFlowControl: lower flow_control values are treated as this.
	MinFlowControl = 1000
	// MaxFlowControl guards the integer conversion; no real audience needs more per second.
	MaxFlowControl = 1_000_000_000
	// MaxExpirationInterval (10 years, in seconds) guards the time arithmetic; gateways keep
	// messages for weeks at most.
	MaxExpirationInterval = 10 * 365 * 24 * 3600
	// ScheduleAfter: a push_time at least this far after now schedules the push; an earlier
	// one is ignored and the push is sent at once (spec "Scheduled push lifecycle").
	ScheduleAfter = time.Minute
	// maxCollapseID is APNs' limit on apns-collapse-id (gateways.md §1.3).
	maxCollapseID = 64
)

// MaxPushTime bounds push_time: the stores key a schedule by its due time in Unix
// nanoseconds, which overflow in 2262 (a wrapped key is due at once, so a typo such as 3026
// sent the push immediately). 2200 leaves room for expiry arithmetic on top.
var MaxPushTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)

// Common holds the parameters both push endpoints share.
type Common struct {
	// Data is the validated data object, a compact copy of the request's.
	Data json.RawMessage
	// ExpiresAt is the absolute expiry: expiration_time, or expiration_interval counted from
	// push_time when given (scheduled or not), else from now. Zero: no expiry.
	ExpiresAt time.Time
	// ExpirationInterval is expiration_interval in seconds as given (0: absent), for the record.
	ExpirationInterval int64
	NotificationID     string // "" when absent (the caller assigns one)
	ReqID              string // "" when absent
	Prod               string // "dev" or "prod", defaulted from the X-SVC-Prod header
	Topic              string
	APNsTeamID         string
	// NotificationChannel is _notificationChannel (for devices pushes, else `channel`).
	NotificationChannel string
	// DryRun is the pushd extension dry_run: validate the push and count its audience, but
	// store and send nothing (docs/decisions.md, "Dry runs").
	DryRun bool
	// ChannelPolicy is the pushd extension channel_policy (push/policy.go): how hybrid
	// Android installations are reached; "" when absent (the app's setting applies).
	ChannelPolicy string
	// MessageClass is the pushd extension message_class (push/class.go): system or
	// marketing; "" when absent (the app's messageClass applies).
	MessageClass string
}

// PushRequest is a decoded POST /1.1/push body.
type PushRequest struct {
	Common
	// Where is the query as a compact JSON object, nil when absent. The caller parses it with
	// the query package (this decoder only checks that it is an object).
	Where json.RawMessage
	// Channels are the target channels (a string is a one-element list), valid and de-duplicated.
	Channels []string
	// PushTime is push_time as given (nil: absent).
	PushTime *time.Time
	// Scheduled says PushTime is at least ScheduleAfter after now: the push waits until then.
	// A PushTime that is not is ignored and the push is sent at once.
	Scheduled bool
	// FlowControl is targets per second, 0 when off, else at least MinFlowControl.
	FlowControl int
	// NeedsIOSOnly says data gives an alert object to an Android platform (the object form is
	// only for iOS) and where does not visibly pin deviceType "ios" (top-level equality).
	// The caller must reject the push with IOSOnlyError() unless the parsed query's hints
	// pin deviceType "ios".
	NeedsIOSOnly bool
}

// DevicesRequest is a decoded POST /1.1/push/devices body.
type DevicesRequest struct {
	Common
	DeviceType string   // "ios" or "android"
	DeviceIDs  []string // 1..MaxDeviceIDs non-empty ids, de-duplicated, in request order
	// DeviceProfile is device_profile as given ("" when absent: the sender uses the stored
	// settings, push.DefaultProfile for hybrid Android).
	DeviceProfile string
	// Channel is the `channel` parameter (Android notification channel) as given.
	Channel string
	// Vendor is the hybrid-push vendor as a delivery channel name (mi, hms, mz, vivo, oppo,
	// fcm); "" for iOS and the own Android channel.
	Vendor string
}

// DeliveryChannel returns where the listed devices' pushes go: apns for iOS, the vendor's
// channel for hybrid Android, direct otherwise.
func (r *DevicesRequest) DeliveryChannel() string {
	switch {
	case r.DeviceType == push.DeviceIOS:
		return push.ChannelAPNs
	case r.Vendor != "":
		return r.Vendor
	default:
		return push.ChannelDirect
	}
}

// IOSOnlyError is the error for a push whose alert object would reach non-iOS targets.
func IOSOnlyError() *push.Error {
	return push.Errorf(push.CodeValidation,
		`the alert object form is allowed only when every target is iOS: pin "where" to deviceType "ios", or give Android platforms a string alert`)
}

// MergedWhere returns the query with the channels condition added, as the job carries it:
// channels become `{"channels":{"$in":[...]}}` (devices subscribed to any of them), joined to
// where with $and when where reads channels itself. Nil when there is neither.
func (r *PushRequest) MergedWhere() json.RawMessage {
	if len(r.Channels) == 0 {
		return r.Where
	}
	ch := appendChannelsIn(nil, r.Channels)
	var where map[string]json.RawMessage
	if len(r.Where) == 0 || json.Unmarshal(r.Where, &where) != nil || len(where) == 0 {
		return ch
	}
	if _, ok := where["channels"]; !ok {
		var b bytes.Buffer
		b.Write(bytes.TrimSuffix(bytes.TrimSpace(r.Where), []byte("}")))
		b.WriteByte(',')
		b.Write(bytes.TrimPrefix(ch, []byte("{")))
		return b.Bytes()
	}
	var b bytes.Buffer
	b.WriteString(`{"$and":[`)
	b.Write(r.Where)
	b.WriteByte(',')
	b.Write(ch)
	b.WriteString(`]}`)
	return b.Bytes()
}

// appendChannelsIn appends `{"channels":{"$in":[...]}}` for channels, as encoding/json writes
// it, without its reflection over two maps (a sixth of an accept's allocations). A valid channel
// name (letters, digits, _, -, = and CJK ideographs) needs no escape; any other goes through
// encoding/json.
func appendChannelsIn(dst []byte, channels []string) []byte {
	dst = append(dst, `{"channels":{"$in":[`...)
	for i, ch := range channels {
		if i > 0 {
			dst = append(dst, ',')
		}
		if push.ChannelNameChars(ch) {
			dst = append(append(append(dst, '"'), ch...), '"')
			continue
		}
		q, _ := json.Marshal(ch) // a string always encodes
		dst = append(dst, q...)
	}
	return append(dst, "]}}"...)
}

// DecodePush decodes and validates a POST /1.1/push body. prodHeader is the X-SVC-Prod
// header's value, "" when absent. Errors carry the spec's codes: 413 for a body of MaxBody
// bytes or more, 107 when it is not a JSON object, 113 for missing data, 111 for a wrong
// type, 112 for a bad channel name, 1 (push.CodeValidation) for other invalid values.
func DecodePush(body []byte, ed push.Edition, prodHeader string, now time.Time) (*PushRequest, *push.Error) {
	f, perr := decodeBody(body, "")
	if perr != nil {
		return nil, perr
	}
	if perr := f.dropSDKQueryParams(); perr != nil {
		return nil, perr
	}
	if perr := f.checkNames(pushParams, pathPush); perr != nil {
		return nil, perr
	}
	f.dropNulls()
	r := &PushRequest{}
	if perr := f.common(&r.Common, prodHeader); perr != nil {
		return nil, perr
	}
	if raw, ok := f["where"]; ok {
		// The original's Objective-C SDK (LCPush.m, postData) sends a query's where as
		// its JSON text, a string; the original reads both forms.
		if isKind(raw, '"') {
			var text string
			if json.Unmarshal(raw, &text) != nil || !isKind(json.RawMessage(text), '{') || !json.Valid([]byte(text)) {
				return nil, typeError("where", "a JSON object (or its JSON text)")
			}
			raw = json.RawMessage(text)
		}
		if !isKind(raw, '{') {
			return nil, typeError("where", "a JSON object")
		}
		r.Where = compact(raw)
	}
	if r.Channels, perr = f.channels("channels"); perr != nil {
		return nil, perr
	}
	if raw, ok := f["push_time"]; ok {
		t, perr := parseTime("push_time", raw)
		if perr != nil {
			return nil, perr
		}
		if !t.Before(MaxPushTime) {
			return nil, push.Errorf(push.CodeValidation, "push_time must be before %s", MaxPushTime.Format("2006-01-02"))
		}
		r.PushTime = &t
		r.Scheduled = !t.Before(now.Add(ScheduleAfter))
	}
	// expiration_interval counts from push_time whatever its distance (spec): a push_time
	// under a minute away, or past, sends at once but still starts the interval.
	sendAt := now
	if r.PushTime != nil {
		sendAt = *r.PushTime
	}
	if perr := f.expiry(&r.Common, now, sendAt); perr != nil {
		return nil, perr
	}
	if r.FlowControl, perr = f.flowControl(); perr != nil {
		return nil, perr
	}
	top, perr := checkDataTop(r.Data, ed)
	if perr != nil {
		return nil, perr
	}
	if perr := checkClassData(r.MessageClass, r.Data); perr != nil {
		return nil, perr
	}
	if r.NeedsIOSOnly, perr = checkContentQueryTop(r.Data, top, ed, pinnedDeviceType(r.Where), now); perr != nil {
		return nil, perr
	}
	return r, nil
}

// devicesOnlyRefused are /1.1/push parameters that /1.1/push/devices refuses with a message
// of their own: ignoring them would silently send at once, or to every listed device. Every
// other name outside devicesParams is refused too.
var devicesOnlyRefused = []string{"where", "channels", "push_time", "flow_control"}

// DecodePushDevices decodes and validates a POST /1.1/push/devices body (see DecodePush).
func DecodePushDevices(body []byte, ed push.Edition, prodHeader string, now time.Time) (*DevicesRequest, *push.Error) {
	f, perr := decodeBody(body, "device_ids")
	if perr != nil {
		return nil, perr
	}
	for _, k := range devicesOnlyRefused {
		if _, ok := f[k]; ok {
			return nil, push.Errorf(push.CodeValidation, "%s is not a parameter of %s (it is one of %s)", k, pathDevices, pathPush)
		}
	}
	if perr := f.checkNames(devicesParams, pathDevices); perr != nil {
		return nil, perr
	}
	f.dropNulls()
	r := &DevicesRequest{}
	if perr := f.common(&r.Common, prodHeader); perr != nil {
		return nil, perr
	}
	if perr := f.expiry(&r.Common, now, now); perr != nil {
		return nil, perr
	}
	if perr := f.devices(r, ed); perr != nil {
		return nil, perr
	}
	if perr := checkData(r.Data, ed); perr != nil {
		return nil, perr
	}
	if perr := checkClassData(r.MessageClass, r.Data); perr != nil {
		return nil, perr
	}
	if perr := checkContentDevices(r.Data, r.DeliveryChannel(), now); perr != nil {
		return nil, perr
	}
	return r, nil
}
