package oppo

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/vendor"
)

// OPPO's field limits (gateways.md §7.2).
const (
	maxTitle       = 50 // characters (older documents: 32)
	maxContent     = 50
	maxLongContent = 128 // style 2 (long text)
	maxParams      = 4000
	maxTTL         = 10 * 24 * 3600 // seconds (older documents: 3 days)
	maxCallback    = 200            // characters of call_back_url
)

var (
	errBadBody   = errors.New("oppo message body is not a vendor body")
	errNoContent = errors.New("oppo needs a notification text (alert)")
	errParams    = errors.New("oppo action_parameters (the custom attributes) exceed 4000 characters")
)

type notification struct {
	Title            string `json:"title"`
	Content          string `json:"content"`
	Style            int    `json:"style"`
	ClickActionType  int    `json:"click_action_type"`
	ActionParameters string `json:"action_parameters,omitempty"`
	OffLine          bool   `json:"off_line"`
	OffLineTTL       int64  `json:"off_line_ttl"`
	ChannelID        string `json:"channel_id,omitempty"`
	NotifyID         int64  `json:"notify_id,omitempty"` // vendor.NotifyID of the push's notification id
	Category         string `json:"category,omitempty"`
	NotifyLevel      *int   `json:"notify_level,omitempty"`
	// The receipt (OPPO's "消息回执"): registration-id targets only, which are all pushd's.
	CallBackURL       string `json:"call_back_url,omitempty"`
	CallBackParameter string `json:"call_back_parameter,omitempty"`
}

// The classification of a marketing push without data.oppo category and notify_level.
const categoryMarketing = "MARKETING"

var notifyLevelMarketing = 2 // the bar and the lock screen

type params struct {
	Category    *string `json:"category"`
	NotifyLevel *int    `json:"notify_level"`
}

// buildNotification maps a rendered VendorBody to OPPO's notification object, encoded once
// per request. The title is the alert when the push has none (OPPO requires one), cut to 50
// characters; content over 50 characters uses the long-text style (2) and is cut to 128;
// click_action_type 0 opens the app; custom attributes travel as action_parameters (JSON
// text); off_line_ttl is the push's remaining lifetime, at most 10 days (10 days without an
// expiration); channel_id is the notification channel, else the profile's channel of the
// push's message class.
//
// cbURL and cbParam ask for a receipt ("" for none).
func buildNotification(body []byte, chans vendor.ClassChannels, exp, now time.Time, cbURL, cbParam string) ([]byte, error) {
	var vb render.VendorBody
	if err := json.Unmarshal(body, &vb); err != nil || vb.Silent {
		return nil, errBadBody
	}
	if strings.TrimSpace(vb.Alert) == "" {
		return nil, errNoContent
	}
	title := vb.Title
	if strings.TrimSpace(title) == "" {
		title = vb.Alert
	}
	n := notification{
		Title:      cut(title, maxTitle),
		Content:    vb.Alert,
		Style:      1,
		OffLine:    true,
		OffLineTTL: maxTTL,
		ChannelID:  cmp.Or(vb.NotificationChannel, chans.For(vb.MessageClass)),
		NotifyID:   vendor.NotifyID(vb.NotificationID),

		CallBackURL:       cbURL,
		CallBackParameter: cbParam,
	}
	if utf8.RuneCountInString(n.Content) > maxContent {
		n.Style, n.Content = 2, cut(n.Content, maxLongContent)
	}
	if !exp.IsZero() {
		n.OffLineTTL = min(max(int64(exp.Sub(now)/time.Second), 1), maxTTL)
	}
	if len(vb.Custom) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, vb.Custom); err != nil {
			return nil, errBadBody
		}
		if b.Len() > maxParams {
			return nil, errParams
		}
		n.ActionParameters = b.String()
	}
	if len(vb.Params) > 0 {
		var p params
		if err := json.Unmarshal(vb.Params, &p); err != nil {
			return nil, errBadBody
		}
		if p.Category != nil {
			n.Category = *p.Category
		}
		n.NotifyLevel = p.NotifyLevel
	}
	if n.Category == "" && n.NotifyLevel == nil && vb.MessageClass == push.ClassMarketing {
		// OPPO's marketing category, shown in the bar and on the lock screen (gateways.md
		// §7.2, §8a). A system push carries none: OPPO's system categories (IM, ACCOUNT,
		// ORDER, ...) need the one that fits the message, and its private channel
		// (channels.system) is what exempts it from the public channel's caps.
		n.Category, n.NotifyLevel = categoryMarketing, &notifyLevelMarketing
	}
	return json.Marshal(n)
}

// appendMessage appends one unicast message to regID carrying the encoded notification.
func appendMessage(b []byte, regID string, notif []byte) []byte {
	b = append(b, `{"target_type":2,"target_value":`...)
	id, _ := json.Marshal(regID)
	b = append(b, id...)
	b = append(b, `,"notification":`...)
	b = append(b, notif...)
	return append(b, '}')
}

// cut keeps the first n characters of s.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
