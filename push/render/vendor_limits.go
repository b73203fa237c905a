package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/pushd/pushd/push"
)

// ErrVendorParam: a key of data.<vendor> that the vendor would refuse (vivo pushMode, hms and
// honor target_user_type, honor importance, mz clickType/url/activity/notifyKey). Like
// ErrTooLarge it fails the channel's targets of a query push and refuses a devices push.
var ErrVendorParam = errors.New("a vendor parameter is invalid")

// Vendor payload limits (gateways.md §3.2, §4.2, §6.2, §7.2): what the app puts in a push that
// a sender can neither cut nor drop. Titles and texts are cut by the senders to the vendor's
// lengths (docs/decisions.md), so they are not limits here.
const (
	// maxMiPayload: Xiaomi's payload must stay under 4 KB.
	maxMiPayload = 4095
	// maxHMSBody: HMS's request without its tokens; hmsFixed is the most the sender's fixed
	// members take (validate_only, urgency, the longest ttl, click_action, the key names).
	maxHMSBody = 4096
	hmsFixed   = 200
	// maxVivoCustom: vivo's clientCustomMap, at most 1024 characters in all.
	maxVivoCustom = 1024
	// maxOppoParams: OPPO's action_parameters, at most 4000 characters.
	maxOppoParams = 4000
)

var mzNotifyKey = regexp.MustCompile(`^[0-9a-zA-Z_-]{1,8}$`)

// checkVendor checks a rendered VendorBody against its vendor's limits and data.<vendor>
// parameters. Meizu documents no payload size and Honor's limits are unconfirmed: only their
// parameters are checked.
func checkVendor(channel string, vb *VendorBody) error {
	if err := CheckVendorParams(channel, vb.Params); err != nil {
		return err
	}
	switch channel {
	case push.ChannelMi:
		if n := len(miPayload(vb)); n > maxMiPayload {
			return fmt.Errorf("%w: the mi payload (custom attributes%s) is %d bytes, over Xiaomi's limit of %d", ErrTooLarge, silentNote(vb), n, maxMiPayload)
		}
	case push.ChannelHMS:
		data, _ := json.Marshal(string(miPayload(vb))) // the HMS data member is a JSON string
		title := vb.Title
		if title == "" {
			title = vb.Alert
		}
		n := hmsFixed + len(data) + jsonLen(title) + jsonLen(vb.Alert) + jsonLen(vb.NotificationChannel)
		if n > maxHMSBody {
			return fmt.Errorf("%w: the hms message (title, alert and custom attributes) is about %d bytes, over Huawei's limit of %d", ErrTooLarge, n, maxHMSBody)
		}
	case push.ChannelVivo:
		if n := utf8.RuneCount(miPayload(vb)); n > maxVivoCustom {
			return fmt.Errorf("%w: the vivo custom attributes are %d characters, over vivo's limit of %d", ErrTooLarge, n, maxVivoCustom)
		}
	case push.ChannelOppo:
		if n := utf8.RuneCount(miPayload(vb)); n > maxOppoParams {
			return fmt.Errorf("%w: the oppo custom attributes are %d characters, over OPPO's limit of %d", ErrTooLarge, n, maxOppoParams)
		}
	}
	return nil
}

// miPayload is the custom attributes as the Mi and HMS senders send them: the compact custom
// object, or for a silent push one object of alert, title and the custom attributes. Both
// are as the message body stores them, through encoding/json, which writes <, > and & as
// \u003c, \u003e and \u0026.
func miPayload(vb *VendorBody) []byte {
	if !vb.Silent {
		var b bytes.Buffer
		json.HTMLEscape(&b, vb.Custom)
		return b.Bytes()
	}
	obj := map[string]json.RawMessage{}
	if len(vb.Custom) > 0 {
		_ = json.Unmarshal(vb.Custom, &obj) // rendered by subObject: an object
	}
	obj["alert"], _ = json.Marshal(vb.Alert)
	if vb.Title != "" {
		obj["title"], _ = json.Marshal(vb.Title)
	}
	b, _ := json.Marshal(obj)
	return b
}

func silentNote(vb *VendorBody) string {
	if vb.Silent {
		return ", alert and title of a silent push"
	}
	return ""
}

func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// CheckVendorParams checks the data.<vendor> keys the senders map to vendor fields (params:
// a JSON object of VendorParams[channel] keys); the error wraps ErrVendorParam.
func CheckVendorParams(channel string, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil {
		return ErrBadData
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: data.%s %s", ErrVendorParam, channel, fmt.Sprintf(format, a...))
	}
	switch channel {
	case push.ChannelVivo:
		if v, ok := p["pushMode"]; ok && !isIntIn(v, 0, 1) {
			return bad("pushMode must be 0 (production) or 1 (test)")
		}
	case push.ChannelHMS:
		if v, ok := p["target_user_type"]; ok && !isIntIn(v, 0, 1) {
			return bad("target_user_type must be 0 or 1 (test user)")
		}
	case push.ChannelHonor:
		if v, ok := p["target_user_type"]; ok && !isIntIn(v, 0, 1) {
			return bad("target_user_type must be 0 or 1 (test user)")
		}
		if v, ok := p["importance"]; ok {
			var s string
			if json.Unmarshal(v, &s) != nil || (s != "NORMAL" && s != "LOW") {
				return bad("importance must be NORMAL (service and communication) or LOW (marketing)")
			}
		}
	case push.ChannelMz:
		ct := -1
		if v, ok := p["clickType"]; ok {
			if !isIntIn(v, 0, 2) {
				return bad("clickType must be 0 (open the app), 1 (activity) or 2 (url)")
			}
			_ = json.Unmarshal(v, &ct)
		}
		str := func(k string) (string, error) {
			v, ok := p[k]
			if !ok {
				return "", nil
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				return "", bad("%s must be a string", k)
			}
			return s, nil
		}
		url, err := str("url")
		if err != nil {
			return err
		}
		activity, err := str("activity")
		if err != nil {
			return err
		}
		key, err := str("notifyKey")
		if err != nil {
			return err
		}
		switch {
		case ct == 1 && activity == "":
			return bad("clickType 1 needs an activity")
		case ct == 2 && url == "":
			return bad("clickType 2 needs a url")
		case key != "" && !mzNotifyKey.MatchString(key):
			return bad("notifyKey must be 1 to 8 of [0-9a-zA-Z_-]")
		}
	}
	return nil
}

// isIntIn says whether v is a JSON integer within lo..hi.
func isIntIn(v json.RawMessage, lo, hi int) bool {
	var n int
	if json.Unmarshal(v, &n) != nil {
		return false
	}
	return n >= lo && n <= hi
}
