package hms

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/vendor"
)

// categoryMarketing is android.category of a marketing push.
const categoryMarketing = "MARKETING"

// maxTTL is HMS's longest android.ttl, 15 days (gateways.md §3.4).
const maxTTL = 15 * 24 * time.Hour

// message is the HMS message without its tokens (rendered once per request).
type message struct {
	Data    string  `json:"data,omitempty"`
	Android android `json:"android"`
}

type android struct {
	Urgency        string        `json:"urgency"`
	TTL            string        `json:"ttl,omitempty"`
	TargetUserType *int          `json:"target_user_type,omitempty"`
	Category       string        `json:"category,omitempty"`
	BiTag          string        `json:"bi_tag,omitempty"`     // receipt.Param: the push a receipt is about
	ReceiptID      string        `json:"receipt_id,omitempty"` // the profile's receipt configuration
	Notification   *notification `json:"notification,omitempty"`
}

type notification struct {
	Title       string      `json:"title"`
	Body        string      `json:"body"`
	ChannelID   string      `json:"channel_id,omitempty"`
	NotifyID    int64       `json:"notify_id,omitempty"` // vendor.NotifyID of the push's notification id
	ClickAction clickAction `json:"click_action"`
}

type clickAction struct {
	Type int `json:"type"` // 3: open the app
}

// params are the keys of data.hms taken as HMS fields (render.VendorParams).
type params struct {
	TargetUserType *int `json:"target_user_type"`
}

var errBadBody = errors.New("hms message body is not a vendor body")

// buildMessage maps a rendered VendorBody to the HMS message. A notification shows title
// (the alert when the push has none: HMS requires one) and body, and opens the app; custom
// attributes go to message.data as a JSON string. A silent push is a data message whose
// data holds alert, title and the custom attributes. ttl is the push's remaining lifetime
// (at most 15 days); target_user_type comes from data.hms (1: test user); a marketing push
// has android.category MARKETING.
func buildMessage(body []byte, exp, now time.Time) (message, error) {
	var vb render.VendorBody
	if err := json.Unmarshal(body, &vb); err != nil {
		return message{}, errBadBody
	}
	m := message{Android: android{Urgency: "NORMAL"}}
	if !exp.IsZero() {
		m.Android.TTL = vendor.TTLSeconds(exp.Sub(now), maxTTL)
	}
	if len(vb.Params) > 0 {
		var p params
		if err := json.Unmarshal(vb.Params, &p); err != nil || (p.TargetUserType != nil && *p.TargetUserType != 0 && *p.TargetUserType != 1) {
			return message{}, errors.New("data.hms target_user_type must be 0 or 1")
		}
		m.Android.TargetUserType = p.TargetUserType
	}
	if vb.Silent {
		d, err := vendor.PassThroughData(&vb)
		if err != nil {
			return message{}, err
		}
		m.Data = d
		return m, nil
	}
	title := vb.Title
	if title == "" {
		title = vb.Alert
	}
	m.Android.Notification = &notification{Title: title, Body: vb.Alert, ChannelID: vb.NotificationChannel,
		NotifyID: vendor.NotifyID(vb.NotificationID), ClickAction: clickAction{Type: 3}}
	if vb.MessageClass == push.ClassMarketing {
		// Huawei's news-and-marketing class (gateways.md §8a). A system push carries no
		// category: a service or communication category needs Huawei's self-classification
		// permission and the one that fits the message, which pushd cannot know.
		m.Android.Category = categoryMarketing
	}
	if len(vb.Custom) > 0 {
		d, err := vendor.CompactJSON(vb.Custom)
		if err != nil {
			return message{}, errBadBody
		}
		m.Data = d
	}
	return m, nil
}

// appendRequest appends {"validate_only":false,"message":{"token":[…],<m's members>}}.
func appendRequest(dst []byte, m *message, tokens []string) ([]byte, error) {
	return vendor.AppendTokenRequest(dst, `{"validate_only":false,"message":{"token":`, tokens, m, `}}`)
}
