package mz

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/vendor"
)

// Meizu's field limits (gateways.md §5.2, §5.4).
const (
	maxTitle     = 32 // characters
	maxContent   = 100
	maxValidTime = 72  // hours
	maxCallback  = 128 // bytes of extra.callback
)

var notifyKeyRE = regexp.MustCompile(`^[0-9a-zA-Z_-]{1,8}$`)

// message is Meizu's messageJson of a notification (varnished) message.
type message struct {
	NoticeBarInfo noticeBarInfo     `json:"noticeBarInfo"`
	ClickTypeInfo clickTypeInfo     `json:"clickTypeInfo"`
	PushTimeInfo  pushTimeInfo      `json:"pushTimeInfo"`
	AdvanceInfo   *advanceInfo      `json:"advanceInfo,omitempty"`
	Extra         map[string]string `json:"extra,omitempty"` // the receipt's callback
}

type noticeBarInfo struct {
	NoticeMsgType int    `json:"noticeMsgType"` // 0 public
	NoticeBarType int    `json:"noticeBarType"` // 0 default style
	Title         string `json:"title"`
	Content       string `json:"content"`
}

type clickTypeInfo struct {
	ClickType  int             `json:"clickType"` // 0 open the app, 1 an activity, 2 a URI
	URL        string          `json:"url,omitempty"`
	Activity   string          `json:"activity,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

type pushTimeInfo struct {
	OffLine   int `json:"offLine"`             // 1: kept while the device is offline
	ValidTime int `json:"validTime,omitempty"` // hours, 1..72 (Meizu's default 24)
}

type advanceInfo struct {
	NotifyKey string `json:"notifyKey,omitempty"`
}

// Params are the keys of data.mz taken as Meizu fields (render.VendorParams): the click
// action (clickType 1 with activity, 2 with url) and the notifyKey that collapses
// notifications. render checks them at intake; the sender checks them again.
type Params struct {
	ClickType *int   `json:"clickType"`
	URL       string `json:"url"`
	Activity  string `json:"activity"`
	NotifyKey string `json:"notifyKey"`
}

// Check reports params Meizu refuses.
func (p Params) Check() error {
	if p.ClickType != nil {
		switch *p.ClickType {
		case 0:
		case 1:
			if p.Activity == "" {
				return errors.New("data.mz clickType 1 needs an activity")
			}
		case 2:
			if p.URL == "" {
				return errors.New("data.mz clickType 2 needs a url")
			}
		default:
			return errors.New("data.mz clickType must be 0 (open the app), 1 (activity) or 2 (url)")
		}
	}
	if p.NotifyKey != "" && !notifyKeyRE.MatchString(p.NotifyKey) {
		return errors.New("data.mz notifyKey must be 1 to 8 of [0-9a-zA-Z_-]")
	}
	return nil
}

var errBadBody = errors.New("mz message body is not a vendor body")

// messageJSON maps a rendered VendorBody to Meizu's messageJson. The notification shows
// title (the alert when the push has none: Meizu requires one) and content, cut to 32 and
// 100 characters; the custom attributes travel as clickTypeInfo.parameters; validTime is the
// push's remaining lifetime in whole hours rounded up (1..72), Meizu's default 24 without an
// expiry; notifyKey comes from data.mz, else from the notification id, so a resent push
// replaces its notification.
//
// extra, when not nil, asks for a receipt (callback, callback.param, callback.type).
func messageJSON(body []byte, exp, now time.Time, extra map[string]string) (string, error) {
	var vb render.VendorBody
	if err := json.Unmarshal(body, &vb); err != nil {
		return "", errBadBody
	}
	if vb.Silent {
		return "", render.ErrNoPassThrough
	}
	var p Params
	if len(vb.Params) > 0 {
		if err := json.Unmarshal(vb.Params, &p); err != nil {
			return "", errors.New("data.mz clickType must be a number and url, activity, notifyKey strings")
		}
		if err := p.Check(); err != nil {
			return "", err
		}
	}
	title := vb.Title
	if strings.TrimSpace(title) == "" {
		title = vb.Alert
	}
	m := message{
		NoticeBarInfo: noticeBarInfo{Title: cut(title, maxTitle), Content: cut(vb.Alert, maxContent)},
		PushTimeInfo:  pushTimeInfo{OffLine: 1},
		Extra:         extra,
	}
	if p.ClickType != nil {
		m.ClickTypeInfo = clickTypeInfo{ClickType: *p.ClickType, URL: p.URL, Activity: p.Activity}
	}
	if len(vb.Custom) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, vb.Custom); err != nil {
			return "", errBadBody
		}
		m.ClickTypeInfo.Parameters = c.Bytes()
	}
	if !exp.IsZero() {
		h := int(math.Ceil(exp.Sub(now).Hours()))
		m.PushTimeInfo.ValidTime = min(max(h, 1), maxValidTime)
	}
	switch {
	case p.NotifyKey != "":
		m.AdvanceInfo = &advanceInfo{NotifyKey: p.NotifyKey}
	case vb.NotificationID != "":
		m.AdvanceInfo = &advanceInfo{NotifyKey: vendor.NotifyKey(vb.NotificationID)}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", errBadBody
	}
	return string(b), nil
}

// cut keeps the first n characters of s.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}
