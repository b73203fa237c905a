package render

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/pushd/pushd/push"
)

// apsOrder is the order of the known aps keys in a rendered payload; other aps keys (the
// Apple-style form may carry any, e.g. interruption-level) follow, sorted.
var apsOrder = []string{"alert", "badge", "sound", "thread-id", "category", "content-available",
	"mutable-content", "url-args", "target-content-id"}

// badgeIncrement is the one string badge value the spec allows. It asks for the device's
// stored badge plus one, which a payload rendered once for every target cannot carry: the
// shared payload leaves the badge out, and a Badged template lets fan-out write each target's
// own (docs/decisions.md, "Push payloads").
const badgeIncrement = "Increment"

// maxBadgeDigits is the room a Badged payload reserves for the badge: push.MaxBadge's digits.
const maxBadgeDigits = 10

// Badged is the APNs payload of a push whose badge is "Increment", with the badge left for each
// target to fill in (its installation's stored badge plus one). It is immutable and shared.
type Badged struct {
	head, tail []byte // the payload is head, the badge's digits, tail
}

// Len is the most bytes AppendBody appends.
func (t *Badged) Len() int { return len(t.head) + maxBadgeDigits + len(t.tail) }

// AppendBody appends to dst the payload with badge n (0 ≤ n ≤ push.MaxBadge).
func (t *Badged) AppendBody(dst []byte, n int64) []byte {
	dst = append(dst, t.head...)
	dst = strconv.AppendInt(dst, min(max(n, 0), push.MaxBadge), 10)
	return append(dst, t.tail...)
}

// RenderBadged renders data's APNs message as Render does and, when its badge is "Increment",
// the per-target template of its payload (nil otherwise). The message's own Body then has no
// badge: fan-out sends each target the template's payload instead.
func RenderBadged(data json.RawMessage, opts Options) (*push.Message, *Badged, error) {
	var bt *Badged
	opts.badged = &bt
	msg, err := Render(data, push.ChannelAPNs, opts)
	if err != nil {
		return nil, nil, err
	}
	return msg, bt, nil
}

// renderIOS renders the APNs payload. The flat attributes build aps; an aps object (the
// Apple-style form) is merged over them key by key. collapse-id, apns-priority and
// apns-push-type become Message fields (request headers), never payload keys.
func renderIOS(m attrs, opts Options) (*push.Message, error) {
	aps := make(attrs, 8) // one group of the map: most pushes set two to four members
	title, hasTitle, err := m.str("title")
	if err != nil {
		return nil, err
	}
	if alert, ok := m["alert"]; ok {
		switch {
		case isString(alert) && hasTitle:
			body, ok := decodeString(alert)
			if !ok {
				return nil, ErrBadData
			}
			aps["alert"] = alertObject(attrs{"body": mustString(body)}, title)
		case isString(alert):
			aps["alert"] = alert
		case isObject(alert):
			obj, err := decodeObject(alert)
			if err != nil {
				return nil, err
			}
			if _, ok := obj["title"]; !ok && hasTitle {
				aps["alert"] = alertObject(obj, title)
			} else {
				aps["alert"] = alert
			}
		default:
			return nil, ErrBadData
		}
	}
	for _, k := range []string{"badge", "sound", "thread-id", "category", "content-available",
		"mutable-content", "url-args", "target-content-id"} {
		if v, ok := m[k]; ok {
			aps[k] = v
		}
	}
	apsForm := false
	if raw, ok := m["aps"]; ok {
		native, err := decodeObject(raw)
		if err != nil {
			return nil, err
		}
		apsForm = len(native) > 0
		for k, v := range native {
			if isNull(v) {
				delete(aps, k)
			} else {
				aps[k] = v
			}
		}
	}
	if _, set := aps["interruption-level"]; !set && opts.MessageClass == push.ClassMarketing {
		if _, alert := aps["alert"]; alert {
			// A marketing alert goes to the notification list without lighting the screen
			// or sounding (Apple's passive level); data may set its own level.
			aps["interruption-level"] = json.RawMessage(`"passive"`)
		}
	}
	increment, err := normalizeAPS(aps)
	if err != nil {
		return nil, err
	}
	ca, _, err := aps.num("content-available")
	if err != nil {
		return nil, err
	}
	_, hasAlert := aps["alert"]
	_, hasBadge := aps["badge"]
	hasBadge = hasBadge || increment
	_, hasSound := aps["sound"]
	// Content: an alert, a background push (content-available=1), or the Apple-style form,
	// whose aps APNs judges itself.
	if !hasAlert && ca != 1 && !apsForm {
		return nil, ErrNoContent
	}
	background := ca == 1 && !hasAlert && !hasBadge && !hasSound

	msg := &push.Message{
		Channel:    push.ChannelAPNs,
		Expiration: opts.Expiry,
		Topic:      opts.Topic,
		TeamID:     opts.TeamID,
	}
	if msg.CollapseID, _, err = m.str("collapse-id"); err != nil {
		return nil, err
	}
	if msg.PushType, _, err = m.str("apns-push-type"); err != nil {
		return nil, err
	}
	if msg.PushType == "" {
		msg.PushType = "alert"
		if background {
			msg.PushType = "background"
		}
	}
	if f, ok, err := m.num("apns-priority"); err != nil {
		return nil, err
	} else if ok {
		msg.Priority = int(f)
	} else if msg.PushType == "background" {
		msg.Priority = 5 // APNs requires 5 for background pushes (gateways.md §1.3)
	}

	limit := maxAPNsPayload
	if msg.PushType == "voip" {
		limit = maxAPNsVoIPPayload
	}
	body, _, err := writeIOSBody(aps, m, false)
	if err != nil {
		return nil, err
	}
	if len(body)+escapeGrowth(body) > limit {
		return nil, ErrTooLarge
	}
	msg.Body = body
	if increment {
		// The template, with the badge where apsOrder puts it; checked at its longest.
		tb, at, err := writeIOSBody(aps, m, true)
		if err != nil {
			return nil, err
		}
		bt := &Badged{head: tb[:at:at], tail: tb[at:]}
		if bt.Len()+escapeGrowth(tb) > limit {
			return nil, ErrTooLarge
		}
		if opts.badged != nil {
			*opts.badged = bt
		}
	}
	return msg, nil
}

// writeIOSBody writes the APNs payload of aps and m's custom attributes. With badgeSlot it
// writes the "badge" key with no value and says where the value goes.
func writeIOSBody(aps, m attrs, badgeSlot bool) (body []byte, at int, err error) {
	var b bytes.Buffer
	b.Grow(256)
	root := newObj(&b)
	root.key("aps")
	w := newObj(&b)
	for _, k := range apsOrder {
		if k == "badge" && badgeSlot {
			w.key(k)
			at = b.Len()
			continue
		}
		if v, ok := aps[k]; ok {
			if err := w.raw(k, v); err != nil {
				return nil, 0, err
			}
		}
	}
	for _, k := range sortedKeys(new(keyBuf)[:0], aps, func(k string) bool { return !slices.Contains(apsOrder, k) }) {
		if err := w.raw(k, aps[k]); err != nil {
			return nil, 0, err
		}
	}
	w.close()
	for _, k := range sortedKeys(new(keyBuf)[:0], m, isCustom) {
		if err := root.raw(k, m[k]); err != nil {
			return nil, 0, err
		}
	}
	root.close()
	return b.Bytes(), at, nil
}

// normalizeAPS removes badge "Increment" (and says it was there) and turns the sound object's
// boolean critical into the 0/1 number APNs expects.
func normalizeAPS(aps attrs) (increment bool, err error) {
	if v, ok := aps["badge"]; ok && isString(v) {
		if s, ok := decodeString(v); !ok || s != badgeIncrement {
			return false, ErrBadData
		}
		delete(aps, "badge")
		increment = true
	}
	if v, ok := aps["sound"]; ok && isObject(v) {
		snd, err := decodeObject(v)
		if err != nil {
			return false, err
		}
		if c, ok := snd["critical"]; ok {
			switch string(bytes.TrimSpace(c)) {
			case "true":
				snd["critical"] = json.RawMessage("1")
			case "false":
				snd["critical"] = json.RawMessage("0")
			}
			var b bytes.Buffer
			w := newObj(&b)
			for _, k := range sortedKeys(new(keyBuf)[:0], snd, nil) {
				if err := w.raw(k, snd[k]); err != nil {
					return false, err
				}
			}
			w.close()
			aps["sound"] = b.Bytes()
		}
	}
	return increment, nil
}

// alertObject returns obj (an alert object's members) with title added, as JSON.
func alertObject(obj attrs, title string) json.RawMessage {
	var b bytes.Buffer
	w := newObj(&b)
	w.str("title", title)
	for _, k := range sortedKeys(new(keyBuf)[:0], obj, func(k string) bool { return k != "title" }) {
		_ = w.raw(k, obj[k]) // members came from a decoded object: valid JSON
	}
	w.close()
	return b.Bytes()
}

func mustString(s string) json.RawMessage {
	var b bytes.Buffer
	appendString(&b, s)
	return b.Bytes()
}

// escapeGrowth is how many bytes the APNs client adds to a payload: sideshow/apns2 sends the
// notification through json.Marshal, which rewrites <, > and & as \u003c, \u003e, \u0026 (+5
// bytes each) and U+2028, U+2029 as \u2028, \u2029 (+3 each); APNs measures what is sent.
func escapeGrowth(p []byte) int {
	n := 5 * (bytes.Count(p, []byte("<")) + bytes.Count(p, []byte(">")) + bytes.Count(p, []byte("&")))
	return n + 3*(bytes.Count(p, []byte("\u2028"))+bytes.Count(p, []byte("\u2029")))
}
