package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
)

// VendorBody is the neutral payload of the vendor channels (mi, hms, mz, vivo, oppo, honor): each
// vendor sender maps it to its own request fields (gateways.md §3–7).
type VendorBody struct {
	Title               string `json:"title,omitempty"`
	Alert               string `json:"alert"`            // the notification text (description / content / body)
	Silent              bool   `json:"silent,omitempty"` // pass-through message (mi, hms, honor only)
	NotificationChannel string `json:"notificationChannel,omitempty"`
	NotificationID      string `json:"notificationId,omitempty"`
	// MessageClass is the push's message class (push.ClassSystem when empty): the senders
	// map it to their vendor's classification fields unless data.<vendor> sets them.
	MessageClass string `json:"messageClass,omitempty"`
	// Custom holds the custom attributes as a JSON object (the app's payload: mi payload,
	// hms data, vivo clientCustomMap, oppo action_parameters, mz parameters).
	Custom json.RawMessage `json:"custom,omitempty"`
	// Params holds the vendor-specific keys of the vendor's own data object (VendorParams,
	// e.g. vivo pushMode) as a JSON object.
	Params json.RawMessage `json:"params,omitempty"`
}

// KeyNID is the data key carrying a push's notification id where the channel has no field of
// its own for it: the original's own-channel protocol, FCM data messages, and the
// pass-through messages of the HMS family. A custom attribute of that name wins.
const KeyNID = "_nid"

// noPassThrough are the vendors without pass-through messages (ORIGINAL-NOTES §2.4).
var noPassThrough = []string{push.ChannelOppo, push.ChannelVivo, push.ChannelMz}

// android is what every Android platform reads from its view of data.
type android struct {
	alert, title string
	hasTitle     bool
	silent       bool
	channel      string // notification channel: data's _notificationChannel, else the request's
}

func readAndroid(m attrs, opts Options) (android, error) {
	var a android
	raw, ok := m["alert"]
	switch {
	case !ok:
		return a, ErrNoContent
	case isObject(raw):
		return a, ErrAlertObject
	}
	var err error
	if a.alert, _, err = m.str("alert"); err != nil {
		return a, err
	}
	if a.title, a.hasTitle, err = m.str("title"); err != nil {
		return a, err
	}
	if a.silent, _, err = m.boolean("silent"); err != nil {
		return a, err
	}
	ch, ok, err := m.str("_notificationChannel")
	if err != nil {
		return a, err
	}
	if !ok {
		ch = opts.NotificationChannel
	}
	a.channel = ch
	return a, nil
}

// renderDirect renders the data of the own channel's push frame: the platform's view of data
// without the iOS-only attributes (alert, title, silent, action, _notificationChannel and the
// custom attributes), with the request's _notificationChannel filled in when data has none.
func renderDirect(m attrs, opts Options) (*push.Message, error) {
	a, err := readAndroid(m, opts)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	w := newObj(&b)
	keys := sortedKeys(new(keyBuf)[:0], m, func(k string) bool { return !isIOSOnly(k) })
	if _, ok := m["_notificationChannel"]; !ok && a.channel != "" {
		keys = append(keys, "_notificationChannel")
		slices.Sort(keys)
	}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if err := w.raw(k, v); err != nil {
				return nil, err
			}
		} else {
			w.str(k, a.channel)
		}
	}
	w.close()
	return &push.Message{
		Channel:        push.ChannelDirect,
		Body:           b.Bytes(),
		Silent:         a.silent,
		Expiration:     opts.Expiry,
		AndroidChannel: a.channel,
	}, nil
}

// renderFCM renders the FCM HTTP v1 message without its token (the sender splices
// "token" in): notification {title, body} plus data (string values) for a notification,
// data only (alert and title included) for a silent push; android carries priority, ttl,
// collapse_key and the notification channel.
func renderFCM(m attrs, opts Options, now time.Time) (*push.Message, error) {
	a, err := readAndroid(m, opts)
	if err != nil {
		return nil, err
	}
	collapse, _, err := m.str("collapse-id")
	if err != nil {
		return nil, err
	}
	msg := &push.Message{
		Channel:        push.ChannelFCM,
		Silent:         a.silent,
		Priority:       10,
		CollapseID:     collapse,
		Expiration:     opts.Expiry,
		AndroidChannel: a.channel,
	}
	if a.silent || opts.MessageClass == push.ClassMarketing {
		msg.Priority = 5
	}

	var b bytes.Buffer
	b.Grow(256)
	root := newObj(&b)
	if !a.silent {
		root.key("notification")
		n := newObj(&b)
		if a.hasTitle {
			n.str("title", a.title)
		}
		n.str("body", a.alert)
		n.close()
	}
	custom := sortedKeys(new(keyBuf)[:0], m, isCustom)
	if len(custom) > 0 || a.silent {
		root.key("data")
		d := newObj(&b)
		if a.silent {
			d.str("alert", a.alert)
			if a.hasTitle {
				d.str("title", a.title)
			}
			if _, own := m[KeyNID]; !own && opts.NotificationID != "" {
				d.str(KeyNID, opts.NotificationID) // the push's identity (no tag on a data message)
			}
		}
		for _, k := range custom {
			if fcmReserved(k) {
				return nil, fmt.Errorf("%w: %q", ErrReservedKey, k)
			}
			if err := dataString(d, k, m[k]); err != nil {
				return nil, err
			}
		}
		d.close()
	}
	root.key("android")
	an := newObj(&b)
	// A marketing push is not urgent: FCM's normal priority lets Android batch it, as FCM
	// asks of messages that need no immediate attention (docs/decisions.md, "Message class").
	if a.silent || opts.MessageClass == push.ClassMarketing {
		an.str("priority", "normal")
	} else {
		an.str("priority", "high")
	}
	if !opts.Expiry.IsZero() {
		an.str("ttl", fcmTTL(opts.Expiry.Sub(now)))
	}
	if collapse != "" {
		an.str("collapse_key", collapse)
	}
	if !a.silent && (a.channel != "" || opts.NotificationID != "") {
		an.key("notification")
		n := newObj(&b)
		if a.channel != "" {
			n.str("channel_id", a.channel)
		}
		if opts.NotificationID != "" {
			// The push's identity: a notification of the same tag replaces the one shown.
			n.str("tag", opts.NotificationID)
		}
		n.close()
	}
	an.close()
	root.close()
	msg.Body = b.Bytes()
	return msg, nil
}

// fcmTTL formats a remaining lifetime as FCM's duration string, whole seconds rounded up,
// at most 4 weeks.
func fcmTTL(d time.Duration) string {
	d = min(d, maxFCMTTL)
	secs := int64(math.Ceil(d.Seconds()))
	return strconv.FormatInt(secs, 10) + "s"
}

// fcmReserved says whether k may not be a key of FCM's data map (gateways.md §2.2).
func fcmReserved(k string) bool {
	return k == "from" || k == "notification" || k == "message_type" ||
		strings.HasPrefix(k, "google") || strings.HasPrefix(k, "gcm")
}

// dataString writes a data-map member: FCM data values are strings, so a string stays as
// it is and any other JSON value becomes its compact JSON text.
func dataString(w *objWriter, k string, v json.RawMessage) error {
	if isString(v) {
		return w.raw(k, v)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, v); err != nil {
		return ErrBadData
	}
	w.str(k, c.String())
	return nil
}

// renderVendor renders a VendorBody for mi, hms, mz, vivo or oppo.
func renderVendor(m, own attrs, channel string, opts Options) (*push.Message, error) {
	a, err := readAndroid(m, opts)
	if err != nil {
		return nil, err
	}
	if a.silent && slices.Contains(noPassThrough, channel) {
		return nil, ErrNoPassThrough
	}
	params := VendorParams[channel]
	vb := VendorBody{
		Title:               a.title,
		Alert:               a.alert,
		Silent:              a.silent,
		NotificationChannel: a.channel,
		NotificationID:      opts.NotificationID,
		MessageClass:        opts.MessageClass,
	}
	if custom := sortedKeys(new(keyBuf)[:0], m, func(k string) bool {
		_, fromOwn := own[k]
		return isCustom(k) && !(fromOwn && slices.Contains(params, k))
	}); len(custom) > 0 {
		if vb.Custom, err = subObject(m, custom); err != nil {
			return nil, err
		}
	}
	if ps := sortedKeys(new(keyBuf)[:0], own, func(k string) bool { return slices.Contains(params, k) && !isNull(own[k]) }); len(ps) > 0 {
		if vb.Params, err = subObject(own, ps); err != nil {
			return nil, err
		}
	}
	if err := checkVendor(channel, &vb); err != nil {
		return nil, err
	}
	body, err := json.Marshal(vb)
	if err != nil {
		return nil, ErrBadData
	}
	return &push.Message{
		Channel:        channel,
		Body:           body,
		Silent:         a.silent,
		Expiration:     opts.Expiry,
		AndroidChannel: a.channel,
	}, nil
}

func subObject(m attrs, keys []string) (json.RawMessage, error) {
	var b bytes.Buffer
	w := newObj(&b)
	for _, k := range keys {
		if err := w.raw(k, m[k]); err != nil {
			return nil, err
		}
	}
	w.close()
	return b.Bytes(), nil
}
