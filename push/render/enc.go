package render

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
)

// IOSAttributes are the attributes of data that belong to iOS (spec "iOS data attributes" and
// the Apple-style form's aps). alert and title are shared with Android.
var IOSAttributes = []string{"alert", "title", "badge", "sound", "content-available", "mutable-content",
	"collapse-id", "apns-priority", "apns-push-type", "url-args", "target-content-id", "thread-id",
	"category", "aps"}

// AndroidAttributes are the attributes of data that belong to Android (spec "Android data
// attributes"). alert and title are shared with iOS.
var AndroidAttributes = []string{"alert", "title", "silent", "action", "_notificationChannel"}

// VendorParams are the vendor-specific keys taken from a vendor's own object into
// VendorBody.Params rather than the custom attributes.
var VendorParams = map[string][]string{
	push.ChannelVivo: {"pushMode", "classification", "category"},
	push.ChannelOppo: {"category", "notify_level"},
	push.ChannelHMS:  {"target_user_type"},
	// Honor's test-user flag and message class (sender/honor).
	push.ChannelHonor: {"target_user_type", "importance"},
	// Meizu's click action (clickType 1 + activity, 2 + url) and notifyKey (sender/mz).
	push.ChannelMz: {"clickType", "url", "activity", "notifyKey"},
}

func isIOSOnly(k string) bool {
	return k != "alert" && k != "title" && slices.Contains(IOSAttributes, k)
}

// isCustom says whether k is a custom attribute: none of the known ones of any platform.
func isCustom(k string) bool {
	return !IsPlatformKey(k) && !slices.Contains(IOSAttributes, k) && !slices.Contains(AndroidAttributes, k)
}

// sortedKeys appends to dst the keys of m that keep says to keep, sorted, so output is
// deterministic. Callers pass a small array of their own (keyBuf), which stays on their stack
// when the keys fit.
func sortedKeys(dst []string, m attrs, keep func(string) bool) []string {
	ks := dst
	for k := range m {
		if keep == nil || keep(k) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// keyBuf is the room sortedKeys' callers give it: most objects of a push have fewer keys.
type keyBuf [16]string

// objWriter writes one JSON object member by member.
type objWriter struct {
	b *bytes.Buffer
	n int
}

func newObj(b *bytes.Buffer) *objWriter {
	b.WriteByte('{')
	return &objWriter{b: b}
}

func (w *objWriter) key(k string) {
	if w.n > 0 {
		w.b.WriteByte(',')
	}
	w.n++
	appendString(w.b, k)
	w.b.WriteByte(':')
}

// raw writes a member whose value is raw JSON, compacted.
func (w *objWriter) raw(k string, v json.RawMessage) error {
	w.key(k)
	if isPlainString(v) || isPlainLiteral(v) { // the usual member: compact as it is
		w.b.Write(v)
		return nil
	}
	return w.compact(v)
}

func (w *objWriter) compact(v json.RawMessage) error {
	if end, ok := jsondoc.CompactValueEnd(v, 0); ok && end == len(v) {
		w.b.Write(v) // compact already (an object or array as SDKs send it)
		return nil
	}
	if err := json.Compact(w.b, v); err != nil {
		return ErrBadData
	}
	return nil
}

// isPlainLiteral says whether v is true, false, null, or an integer of at most 15 digits:
// valid JSON as it is, and compact.
func isPlainLiteral(v []byte) bool {
	switch string(v) {
	case "true", "false", "null":
		return true
	}
	d := v
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (w *objWriter) str(k, v string) {
	w.key(k)
	appendString(w.b, v)
}

func (w *objWriter) close() { w.b.WriteByte('}') }

// appendString writes s as a JSON string. Unlike encoding/json it does not escape <, > and &
// (gateways count payload bytes); invalid UTF-8 becomes U+FFFD.
func appendString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '\u2028' || r == '\u2029':
			b.WriteString(`\u202`)
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}
