package vivo

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/vendor"
)

// vivo's field limits (gateways.md §6.2).
const (
	maxTitle = 40 // characters
	// maxCallback is the longest extra.callback, in characters.
	maxCallback = 128
	maxContent  = 100
	maxCustom   = 1024 // characters of clientCustomMap's keys and values together
	minTTL      = 60   // seconds
	// maxTTL is the 2024 document's maximum (older ones say 7 days): a longer one may be refused.
	maxTTL = 24 * 3600
)

var (
	errBadBody   = errors.New("vivo message body is not a vendor body")
	errNoContent = errors.New("vivo needs a notification text (alert)")
	errCustom    = errors.New("vivo clientCustomMap (the custom attributes) exceeds 1024 characters")
	errParams    = errors.New("vivo data.vivo holds a bad pushMode, classification or category")
)

// message are vivo's message fields (send and saveListPayload; RegID only for send).
type message struct {
	AppID           json.Number       `json:"appId"`
	RegID           string            `json:"regId,omitempty"`
	NotifyType      int               `json:"notifyType"`
	Title           string            `json:"title"`
	Content         string            `json:"content"`
	TimeToLive      int64             `json:"timeToLive"`
	SkipType        int               `json:"skipType"`
	NetworkType     int               `json:"networkType"`
	Classification  *int              `json:"classification,omitempty"`
	Category        string            `json:"category,omitempty"`
	ClientCustomMap map[string]string `json:"clientCustomMap,omitempty"`
	RequestID       string            `json:"requestId"`
	NotifyID        int64             `json:"notifyId,omitempty"`
	PushMode        int               `json:"pushMode"`
	// Extra asks for a receipt (callback, callback.param): single sends only (vivo sends
	// receipts of /message/send alone).
	Extra map[string]string `json:"extra,omitempty"`
}

// params are the keys of data.vivo taken into VendorBody.Params.
type params struct {
	PushMode       *int    `json:"pushMode"`
	Classification *int    `json:"classification"`
	Category       *string `json:"category"`
}

// buildMessage maps a rendered VendorBody to vivo's fields. The title is the alert when the
// push has none (vivo requires one); title and content are cut to vivo's lengths; custom
// attributes become clientCustomMap (strings as they are, other values as JSON text);
// timeToLive is the push's remaining lifetime within vivo's 60 s..1 day; notifyId derives
// from the notification id so a resent push replaces its notification.
func buildMessage(body []byte, appID json.Number, exp, now time.Time) (message, error) {
	var vb render.VendorBody
	if err := json.Unmarshal(body, &vb); err != nil || vb.Silent {
		return message{}, errBadBody
	}
	if strings.TrimSpace(vb.Alert) == "" {
		return message{}, errNoContent
	}
	title := vb.Title
	if strings.TrimSpace(title) == "" {
		title = vb.Alert
	}
	m := message{
		AppID:       appID,
		NotifyType:  4, // sound and vibration: the device's defaults decide
		Title:       cut(title, maxTitle),
		Content:     cut(vb.Alert, maxContent),
		TimeToLive:  maxTTL,
		SkipType:    1, // open the app
		NetworkType: -1,
	}
	if !exp.IsZero() {
		m.TimeToLive = min(max(int64(exp.Sub(now)/time.Second), minTTL), maxTTL)
	}
	m.NotifyID = vendor.NotifyID(vb.NotificationID) // 1..2147483647; 0 (omitted) without an id
	if len(vb.Params) > 0 {
		var p params
		if err := json.Unmarshal(vb.Params, &p); err != nil {
			return message{}, errParams
		}
		if p.PushMode != nil {
			m.PushMode = *p.PushMode
		}
		m.Classification = p.Classification
		if p.Category != nil {
			m.Category = *p.Category
		}
	}
	if m.Classification == nil && m.Category == "" {
		// The push's message class, unless data.vivo classifies it: 1 system, 0 operational
		// (gateways.md §6.2, §8a). A category alone implies its classification.
		c := classification(vb.MessageClass)
		m.Classification = &c
	}
	if len(vb.Custom) > 0 {
		var c map[string]json.RawMessage
		if err := json.Unmarshal(vb.Custom, &c); err != nil {
			return message{}, errBadBody
		}
		m.ClientCustomMap = make(map[string]string, len(c))
		n := 0
		for k, v := range c {
			var s string
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
				var b bytes.Buffer
				if json.Compact(&b, v) != nil {
					return message{}, errBadBody
				}
				s = b.String()
			}
			m.ClientCustomMap[k] = s
			n += utf8.RuneCountInString(k) + utf8.RuneCountInString(s)
		}
		if n > maxCustom {
			return message{}, errCustom
		}
	}
	return m, nil
}

// classification is vivo's classification of a message class: 0 operational for marketing,
// 1 system otherwise.
func classification(class string) int {
	if class == push.ClassMarketing {
		return 0
	}
	return 1
}

// cut keeps the first n characters of s.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
