package mi

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/vendor"
)

// Xiaomi's field limits (gateways.md §4.2).
const (
	maxTitle       = 49 // characters (< 50)
	maxDescription = 127
	maxTTL         = 14 * 24 * time.Hour
	maxCallback    = 128 // bytes of extra.callback
)

var errBadBody = errors.New("mi message body is not a vendor body")

// fields maps a rendered VendorBody to Xiaomi's form fields (all but registration_id). A
// notification has title (the alert when the push has none: Xiaomi requires one) and
// description, cut to Xiaomi's lengths; custom attributes travel as payload (JSON text). A
// silent push is pass_through=1 with payload = JSON of alert, title and the custom attributes.
// notify_id derives from the notification id, so a resent push replaces its notification.
// extra.channel_id is the push's notification channel, else the profile's channel of the
// push's message class (Xiaomi classifies by the channel's registration: private or public).
func fields(body []byte, pkg string, chans vendor.ClassChannels, exp, now time.Time) (url.Values, error) {
	var vb render.VendorBody
	if err := json.Unmarshal(body, &vb); err != nil {
		return nil, errBadBody
	}
	f := url.Values{
		"restricted_package_name": {pkg},
		"notify_type":             {"-1"},
	}
	if !exp.IsZero() {
		f.Set("time_to_live", strconv.FormatInt(min(exp.Sub(now), maxTTL).Milliseconds(), 10))
	}
	if id := vendor.NotifyID(vb.NotificationID); id != 0 {
		f.Set("notify_id", strconv.FormatInt(id, 10))
	}
	if vb.Silent {
		obj := map[string]json.RawMessage{}
		if len(vb.Custom) > 0 && json.Unmarshal(vb.Custom, &obj) != nil {
			return nil, errBadBody
		}
		obj["alert"], _ = json.Marshal(vb.Alert)
		if vb.Title != "" {
			obj["title"], _ = json.Marshal(vb.Title)
		}
		p, err := json.Marshal(obj)
		if err != nil {
			return nil, errBadBody
		}
		f.Set("pass_through", "1")
		f.Set("payload", string(p))
		return f, nil
	}
	title := vb.Title
	if strings.TrimSpace(title) == "" {
		title = vb.Alert
	}
	f.Set("pass_through", "0")
	f.Set("title", cut(title, maxTitle))
	f.Set("description", cut(vb.Alert, maxDescription))
	f.Set("extra.notify_effect", "1")
	if ch := cmp.Or(vb.NotificationChannel, chans.For(vb.MessageClass)); ch != "" {
		f.Set("extra.channel_id", ch)
	}
	if len(vb.Custom) > 0 {
		c, err := vendor.CompactJSON(vb.Custom)
		if err != nil {
			return nil, errBadBody
		}
		f.Set("payload", c)
	}
	return f, nil
}

// cut keeps the first n characters of s.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}
