package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
)

// fields are the top-level members of a request body. The decoders check their names, then
// drop the null members (a null parameter is an absent one).
type fields map[string]json.RawMessage

// decodeBody decodes a body whose serialized size must be below MaxBody. When listKey is
// set (device_ids of /1.1/push/devices), the rule applies to the body without that list: 500
// device tokens alone are some 33 KB, so the spec's two limits can only hold together that
// way. The whole body is then bounded by MaxDevicesBody.
func decodeBody(body []byte, listKey string) (fields, *push.Error) {
	limit := MaxBody
	if listKey != "" {
		limit = MaxDevicesBody
	}
	if len(body) >= limit {
		return nil, push.Errorf(push.CodeTooLarge, "the push request body must be below %d bytes, got %d", limit, len(body))
	}
	if !isKind(body, '{') {
		return nil, push.Errorf(push.CodeInvalidJSON, "a JSON dictionary is expected")
	}
	f, ok := jsondoc.Members(body) // the usual compact body, without encoding/json's two passes
	if !ok {
		if err := json.Unmarshal(body, &f); err != nil {
			return nil, push.Errorf(push.CodeInvalidJSON, "malformed JSON, a JSON dictionary is expected")
		}
	}
	// JSON that encoding/json reads but readers disagree on (duplicate keys, broken strings),
	// nests too deep or names a prototype key: the installation endpoints share this rule.
	if err := jsondoc.CheckStrict(body, jsondoc.StrictMaxDepth); err != nil {
		return nil, push.Errorf(push.CodeInvalidJSON, "malformed JSON: %v", err)
	}
	if listKey != "" {
		if rest := len(body) - len(f[listKey]); rest >= MaxBody {
			return nil, push.Errorf(push.CodeTooLarge, "the push request body without %s must be below %d bytes, got %d", listKey, MaxBody, rest)
		}
	}
	return f, nil
}

// common decodes the parameters both endpoints share, except the expiry.
func (f fields) common(c *Common, prodHeader string) *push.Error {
	raw, ok := f["data"]
	if !ok {
		return push.Errorf(push.CodeMissingRequired, "data is required")
	}
	if !isKind(raw, '{') {
		return typeError("data", "a JSON object")
	}
	c.Data = compact(raw)
	var perr *push.Error
	if c.DryRun, perr = f.dryRun(); perr != nil {
		return perr
	}
	if c.ChannelPolicy, perr = f.channelPolicy(); perr != nil {
		return perr
	}
	if c.MessageClass, perr = f.messageClass(); perr != nil {
		return perr
	}
	if c.NotificationID, perr = f.id("notification_id"); perr != nil {
		return perr
	}
	if c.ReqID, perr = f.id("req_id"); perr != nil {
		return perr
	}
	prod, ok, perr := f.str("prod")
	switch {
	case perr != nil:
		return perr
	case !ok:
		// Header present and not "1" ⇒ dev, else prod. An empty header counts as absent.
		c.Prod = "prod"
		if prodHeader != "" && prodHeader != "1" {
			c.Prod = "dev"
		}
	case prod == "dev" || prod == "prod":
		c.Prod = prod
	default:
		return push.Errorf(push.CodeValidation, `prod must be "dev" or "prod"`)
	}
	for _, p := range []struct {
		name string
		dst  *string
	}{{"topic", &c.Topic}, {"apns_team_id", &c.APNsTeamID}, {"_notificationChannel", &c.NotificationChannel}} {
		if *p.dst, _, perr = f.str(p.name); perr != nil {
			return perr
		}
	}
	return nil
}

// expiry sets ExpiresAt from expiration_time or expiration_interval (counted from sendAt:
// push_time when given, else now). Both at once are refused, as Parse Server does; so is an
// expiry not after now, or not after sendAt.
func (f fields) expiry(c *Common, now, sendAt time.Time) *push.Error {
	rawTime, hasTime := f["expiration_time"]
	rawIvl, hasIvl := f["expiration_interval"]
	switch {
	case hasTime && hasIvl:
		return push.Errorf(push.CodeValidation, "expiration_time and expiration_interval cannot both be set")
	case hasTime:
		t, perr := parseTime("expiration_time", rawTime)
		if perr != nil {
			return perr
		}
		if !t.After(now) {
			return push.Errorf(push.CodeValidation, "expiration_time is in the past")
		}
		if !t.After(sendAt) {
			return push.Errorf(push.CodeValidation, "expiration_time is not after push_time")
		}
		c.ExpiresAt = t
	case hasIvl:
		n, perr := integer("expiration_interval", rawIvl)
		if perr != nil {
			return perr
		}
		if n <= 0 || n > MaxExpirationInterval {
			return push.Errorf(push.CodeValidation, "expiration_interval must be between 1 and %d seconds", MaxExpirationInterval)
		}
		c.ExpirationInterval = n
		c.ExpiresAt = sendAt.Add(time.Duration(n) * time.Second)
		if !c.ExpiresAt.After(now) {
			return push.Errorf(push.CodeValidation, "expiration_interval counted from push_time has already passed: the push would expire before it is sent")
		}
	}
	return nil
}

func (f fields) flowControl() (int, *push.Error) {
	raw, ok := f["flow_control"]
	if !ok {
		return 0, nil
	}
	n, perr := integer("flow_control", raw)
	if perr != nil {
		return 0, perr
	}
	if n > MaxFlowControl {
		return 0, push.Errorf(push.CodeValidation, "flow_control must be at most %d", MaxFlowControl)
	}
	return int(max(n, MinFlowControl)), nil
}

// str reads an optional string parameter.
func (f fields) str(name string) (string, bool, *push.Error) {
	raw, ok := f[name]
	if !ok {
		return "", false, nil
	}
	var s string
	if !isKind(raw, '"') || json.Unmarshal(raw, &s) != nil {
		return "", false, typeError(name, "a string")
	}
	return s, true, nil
}

// id reads notification_id or req_id: at most MaxIDLength ASCII letters and digits; an
// empty string counts as absent.
func (f fields) id(name string) (string, *push.Error) {
	s, _, perr := f.str(name)
	if perr != nil {
		return "", perr
	}
	if len(s) > MaxIDLength || !alnum(s) {
		return "", push.Errorf(push.CodeValidation, "%s must be at most %d letters and digits", name, MaxIDLength)
	}
	return s, nil
}

func alnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// channels reads a string or an array of strings of channel names.
func (f fields) channels(name string) ([]string, *push.Error) {
	raw, ok := f[name]
	if !ok {
		return nil, nil
	}
	var list []string
	switch {
	case isKind(raw, '"'):
		s, ok := jsondoc.PlainToken(raw)
		if !ok && json.Unmarshal(raw, &s) != nil {
			return nil, typeError(name, "a string or an array of strings")
		}
		list = []string{s}
	case isKind(raw, '['):
		var ok bool
		if list, ok = plainStrings(raw); ok {
			break
		}
		if json.Unmarshal(raw, &list) != nil {
			return nil, typeError(name, "a string or an array of strings")
		}
	default:
		return nil, typeError(name, "a string or an array of strings")
	}
	out := list[:0]
	for _, ch := range list {
		if !ValidChannel(ch) {
			return nil, push.Errorf(push.CodeInvalidChannel,
				"invalid channel name %q: only letters, digits, _, -, = and CJK ideographs are allowed", ch)
		}
		if !slices.Contains(out, ch) {
			out = append(out, ch)
		}
	}
	// "" is the broadcast channel (ORIGINAL-NOTES, code 112): every device is subscribed to
	// it, and no installation can store it, so it adds no condition.
	if len(out) == 0 || slices.Contains(out, "") {
		return nil, nil
	}
	return out, nil
}

// ValidChannel says whether s is a valid channel name of a push: push.ChannelNameChars. The
// empty name is valid (the broadcast channel).
func ValidChannel(s string) bool { return push.ChannelNameChars(s) }

// parseTime reads an ISO 8601 time: a string (RFC 3339, or without zone meaning UTC) or the
// storage interface's typed form {"__type":"Date","iso":...}.
func parseTime(name string, raw json.RawMessage) (time.Time, *push.Error) {
	var s string
	switch {
	case isKind(raw, '"'):
		if json.Unmarshal(raw, &s) != nil {
			return time.Time{}, typeError(name, "an ISO 8601 string")
		}
	case isKind(raw, '{'):
		var d struct {
			Type string `json:"__type"`
			ISO  string `json:"iso"`
		}
		if json.Unmarshal(raw, &d) != nil || d.Type != "Date" {
			return time.Time{}, typeError(name, "an ISO 8601 string")
		}
		s = d.ISO
	default:
		return time.Time{}, typeError(name, "an ISO 8601 string")
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, push.Errorf(push.CodeValidation, "%s is not an ISO 8601 time such as 2030-01-02T15:04:05Z", name)
}

// integer reads a JSON number with an integral value.
func integer(name string, raw json.RawMessage) (int64, *push.Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return 0, typeError(name, "an integer")
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, nil
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, typeError(name, "an integer")
	}
	return int64(v), nil
}

func typeError(name, want string) *push.Error {
	return push.Errorf(push.CodeInvalidType, "%s must be %s", name, want)
}

// isKind says whether the JSON value raw starts with c ('{', '[', '"').
func isKind(raw []byte, c byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == c
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// compact returns a compact copy of a valid JSON value.
func compact(raw json.RawMessage) json.RawMessage {
	if end, ok := jsondoc.CompactValueEnd(raw, 0); ok && end == len(raw) {
		return bytes.Clone(raw) // compact already: the copy json.Compact would make
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		panic("BUG: compact of a decoded JSON value failed: " + err.Error())
	}
	return b.Bytes()
}

// channelPolicy reads the pushd extension channel_policy: one of push's channel policies.
func (f fields) channelPolicy() (string, *push.Error) {
	p, ok, perr := f.str("channel_policy")
	if perr != nil || !ok {
		return "", perr
	}
	if !push.ValidChannelPolicy(p) {
		return "", push.Errorf(push.CodeValidation, "channel_policy must be %q, %q, %q or %q", push.PolicyVendor, push.PolicyOwnFirst, push.PolicyVendorFirst, push.PolicyOwnOnly)
	}
	return p, nil
}

// messageClass reads the pushd extension message_class: system or marketing.
func (f fields) messageClass() (string, *push.Error) {
	c, ok, perr := f.str("message_class")
	if perr != nil || !ok {
		return "", perr
	}
	if !push.ValidMessageClass(c) {
		return "", push.Errorf(push.CodeValidation, "message_class must be %q or %q", push.ClassSystem, push.ClassMarketing)
	}
	return c, nil
}
