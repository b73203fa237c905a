package honor

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/vendor"
)

// maxTTL is Honor's longest android.ttl as documented for HMS, 15 days (unconfirmed for Honor).
const maxTTL = 15 * 24 * time.Hour

// message is the Honor message without its tokens (rendered once per request). Honor's keys
// are camelCase (targetUserType, clickAction), unlike HMS's snake_case.
type message struct {
	Data    string  `json:"data,omitempty"`
	Android android `json:"android"`
}

type android struct {
	TTL            string        `json:"ttl,omitempty"`
	TargetUserType *int          `json:"targetUserType,omitempty"`
	BiTag          string        `json:"biTag,omitempty"` // receipt.Param: the push a receipt is about
	Notification   *notification `json:"notification,omitempty"`
}

type notification struct {
	Title       string      `json:"title"`
	Body        string      `json:"body"`
	ClickAction clickAction `json:"clickAction"`
	Importance  string      `json:"importance,omitempty"`
	NotifyID    int64       `json:"notifyId,omitempty"` // vendor.NotifyID of the push's notification id
}

type clickAction struct {
	Type int `json:"type"` // 3: open the app
}

// params are the keys of data.honor taken as Honor fields (render.VendorParams), checked at
// intake by render.CheckVendorParams.
type params struct {
	TargetUserType *int   `json:"target_user_type"`
	Importance     string `json:"importance"`
}

// buildMessage maps a rendered VendorBody to the Honor message: as for HMS, a notification
// shows title (the alert when the push has none) and body and opens the app, custom attributes
// go to data as a JSON string, and a silent push is a data message of alert, title and the
// custom attributes. ttl is the push's remaining lifetime (at most 15 days);
// target_user_type (1: test user) and importance (NORMAL: service and communication, LOW:
// marketing) come from data.honor; without an importance there, the push's message class
// decides it.
func buildMessage(body []byte, exp, now time.Time) (message, error) {
	var vb render.VendorBody
	if err := json.Unmarshal(body, &vb); err != nil {
		return message{}, vendor.ErrBadBody
	}
	m := message{}
	if !exp.IsZero() {
		m.Android.TTL = vendor.TTLSeconds(exp.Sub(now), maxTTL)
	}
	var p params
	if len(vb.Params) > 0 {
		if err := json.Unmarshal(vb.Params, &p); err != nil || render.CheckVendorParams("honor", vb.Params) != nil {
			return message{}, errors.New("data.honor target_user_type must be 0 or 1 and importance NORMAL or LOW")
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
	importance := p.Importance
	if importance == "" {
		// The push's message class, unless data.honor sets it (gateways.md §8a).
		importance = "NORMAL"
		if vb.MessageClass == push.ClassMarketing {
			importance = "LOW"
		}
	}
	m.Android.Notification = &notification{Title: title, Body: vb.Alert, ClickAction: clickAction{Type: 3}, Importance: importance,
		NotifyID: vendor.NotifyID(vb.NotificationID)}
	if len(vb.Custom) > 0 {
		d, err := vendor.CompactJSON(vb.Custom)
		if err != nil {
			return message{}, vendor.ErrBadBody
		}
		m.Data = d
	}
	return m, nil
}

// appendRequest appends {"token":[…],<m's members>}: Honor's request is the message itself,
// without HMS's validate_only/message envelope.
func appendRequest(dst []byte, m *message, tokens []string) ([]byte, error) {
	return vendor.AppendTokenRequest(dst, `{"token":`, tokens, m, `}`)
}
