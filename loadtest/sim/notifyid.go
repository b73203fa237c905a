package sim

import (
	"encoding/json"
	"net/url"
	"strconv"
)

// The notification identity each simulator records in Sent.NotifyID, as its gateway's request
// carries it (docs/decisions.md "One identity across channels"): the vendors' notify ids
// (Meizu's notifyKey), FCM's android.notification.tag, APNs' apns-collapse-id, and the "_nid"
// member of a pass-through or data message's data where the gateway has no field for it.
// A test joins a device's deliveries across channels on it.

// jsonNotifyID reads the first of the paths in the JSON body b that holds a value; numbers
// are kept as their decimal text and a JSON-text string (HMS data) is read as JSON.
func jsonNotifyID(b []byte, paths ...[]string) string {
	var root any
	if json.Unmarshal(b, &root) != nil {
		return ""
	}
	for _, p := range paths {
		if v := walk(root, p); v != "" {
			return v
		}
	}
	return ""
}

func walk(v any, path []string) string {
	for i, k := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any: // a batch: every element carries the same push
			if len(x) == 0 {
				return ""
			}
			return walk(x[0], path[i:])
		case string: // a JSON text inside a string (HMS/Honor data, OPPO action_parameters)
			var inner any
			if json.Unmarshal([]byte(x), &inner) != nil {
				return ""
			}
			return walk(inner, path[i:])
		default:
			return ""
		}
	}
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatInt(int64(x), 10)
	}
	return ""
}

var (
	nidHMSData   = []string{"message", "data", "_nid"}
	nidHMS       = []string{"message", "android", "notification", "notify_id"}
	nidHonor     = []string{"android", "notification", "notifyId"} // Honor's request has no message wrapper
	nidHonorData = []string{"data", "_nid"}
	nidFCMTag    = []string{"message", "android", "notification", "tag"}
	nidFCMData   = []string{"message", "data", "_nid"}
	nidVivo      = []string{"notifyId"}
	nidOppo      = []string{"notification", "notify_id"}
	nidMz        = []string{"advanceInfo", "notifyKey"}
)

func hmsNotifyID(body []byte) string   { return jsonNotifyID(body, nidHMS, nidHMSData) }
func honorNotifyID(body []byte) string { return jsonNotifyID(body, nidHonor, nidHonorData) }
func fcmNotifyID(body []byte) string   { return jsonNotifyID(body, nidFCMTag, nidFCMData) }
func vivoNotifyID(body []byte) string  { return jsonNotifyID(body, nidVivo) }
func oppoNotifyID(raw []byte) string   { return jsonNotifyID(raw, nidOppo) }
func mzNotifyID(msgJSON []byte) string { return jsonNotifyID(msgJSON, nidMz) }

// miNotifyID reads Xiaomi's notify_id form field (the "_nid" of a pass-through payload
// otherwise).
func miNotifyID(form []byte) string {
	f, err := url.ParseQuery(string(form))
	if err != nil {
		return ""
	}
	if v := f.Get("notify_id"); v != "" {
		return v
	}
	return jsonNotifyID([]byte(f.Get("payload")), []string{"_nid"})
}
