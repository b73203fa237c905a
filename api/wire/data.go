package wire

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/push/render"
)

// validator checks one attribute's value; path names it in errors (e.g. data.ios.badge).
type validator func(path string, raw json.RawMessage, c *dataCtx) *push.Error

// dataCtx is what validators need beyond the value.
type dataCtx struct {
	apsForm bool // data (or data.ios) holds an aps object: the Apple-style form
	inAPS   bool // validating a member of aps
}

// iosAttrs validate the iOS attributes (spec "iOS data attributes").
var iosAttrs map[string]validator

// androidAttrs validate the Android attributes (spec "Android data attributes").
var androidAttrs = map[string]validator{
	"alert":                vString,
	"title":                vString,
	"silent":               vBool,
	"action":               vString,
	"_notificationChannel": vString,
}

// dataPaths are "data.<key>" for the keys checkDataMembers validates (the platform objects and
// the attributes above), built once instead of for every push.
var dataPaths map[string]string

// apsAttrs validate the members of an aps object that the spec names; the others (Apple keeps
// adding, e.g. interruption-level) pass through to APNs unchecked.
var apsAttrs map[string]validator

func init() {
	iosAttrs = map[string]validator{
		"alert":             vAlertIOS,
		"title":             vString,
		"badge":             vBadge,
		"sound":             vSound,
		"content-available": vInt,
		"mutable-content":   vInt,
		"collapse-id":       vCollapseID,
		"apns-priority":     vPriority,
		"apns-push-type":    vPushType,
		"url-args":          vStringList,
		"target-content-id": vString,
		"thread-id":         vString,
		"category":          vString,
		"aps":               vAPS,
	}
	dataPaths = map[string]string{}
	for _, keys := range [][]string{render.PlatformKeys, slices.Collect(maps.Keys(iosAttrs)), slices.Collect(maps.Keys(androidAttrs))} {
		for _, k := range keys {
			dataPaths[k] = "data." + k
		}
	}
	apsAttrs = map[string]validator{}
	for _, k := range []string{"alert", "badge", "sound", "content-available", "mutable-content",
		"url-args", "target-content-id", "thread-id", "category"} {
		apsAttrs[k] = iosAttrs[k]
	}
}

// reservedPlatformNames are names that look like a platform key but are not one: an object
// under one of them is refused as a likely mistake (a non-object value is a custom attribute).
var reservedPlatformNames = map[string]string{
	"apns": "ios", "apple": "ios", "gcm": "fcm", "huawei": "hms",
	"xiaomi": "mi", "meizu": "mz", "flyme": "mz", "heytap": "oppo",
}

// checkData validates the data object (already known to be a JSON object).
func checkData(data json.RawMessage, ed push.Edition) *push.Error {
	_, perr := checkDataTop(data, ed)
	return perr
}

// checkDataTop is checkData that also returns data's members, for checkContentQuery.
func checkDataTop(data json.RawMessage, ed push.Edition) (map[string]json.RawMessage, *push.Error) {
	top, err := object(data)
	if err != nil {
		return nil, typeError("data", "a JSON object")
	}
	return top, checkDataMembers(top, ed)
}

func checkDataMembers(top map[string]json.RawMessage, ed push.Edition) *push.Error {
	c := &dataCtx{apsForm: hasMember(top, "aps")}
	if raw, ok := top[render.KeyIOS]; ok && isKind(raw, '{') {
		if ios, err := object(raw); err == nil && hasMember(ios, "aps") {
			c.apsForm = true
		}
	}
	for _, k := range sortedKeys(top) {
		raw := top[k]
		if isNull(raw) {
			continue
		}
		switch {
		case render.IsPlatformKey(k):
			if perr := checkPlatform(dataPaths[k], k, raw, ed, c); perr != nil {
				return perr
			}
		case iosAttrs[k] != nil:
			if perr := iosAttrs[k](dataPaths[k], raw, c); perr != nil {
				return perr
			}
		case androidAttrs[k] != nil:
			if perr := androidAttrs[k](dataPaths[k], raw, c); perr != nil {
				return perr
			}
		case reservedPlatformNames[k] != "" && isKind(raw, '{'):
			return push.Errorf(push.CodeValidation, "data.%s is not a platform key: use data.%s", k, reservedPlatformNames[k])
		}
	}
	return nil
}

// checkPlatform validates one per-platform object.
func checkPlatform(path, key string, raw json.RawMessage, ed push.Edition, c *dataCtx) *push.Error {
	if !isKind(raw, '{') {
		return typeError(path, "a JSON object")
	}
	if key != render.KeyIOS && key != render.KeyAndroid && !edition(ed).has(key) {
		return push.Errorf(push.CodeValidation, "%s: the %s platform is not available in the %s edition", path, key, edition(ed).name())
	}
	obj, err := object(raw)
	if err != nil {
		return typeError(path, "a JSON object")
	}
	attrs := androidAttrs
	if key == render.KeyIOS {
		attrs = iosAttrs
	}
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		p := path + "." + k
		switch {
		case isNull(v): // null removes the default for this platform
		case render.IsPlatformKey(k):
			return push.Errorf(push.CodeValidation, "%s: platform objects cannot be nested", p)
		case attrs[k] != nil:
			if perr := attrs[k](p, v, c); perr != nil {
				return perr
			}
		case key == push.ChannelVivo && k == "pushMode":
			if perr := vPushMode(p, v, c); perr != nil {
				return perr
			}
		case key == push.ChannelVivo && k == "classification":
			if perr := vVivoClassification(p, v, c); perr != nil {
				return perr
			}
		case key == push.ChannelOppo && k == "notify_level":
			if perr := vOppoNotifyLevel(p, v, c); perr != nil {
				return perr
			}
		case (key == push.ChannelVivo || key == push.ChannelOppo) && k == "category":
			if perr := vVendorCategory(p, v, c); perr != nil {
				return perr
			}
		}
	}
	return checkVendorParams(key, obj)
}

// checkVendorParams refuses data.<vendor> parameters the vendor would refuse (render's rules,
// which fan-out applies to pushes accepted before them).
func checkVendorParams(key string, obj map[string]json.RawMessage) *push.Error {
	sub := map[string]json.RawMessage{}
	for _, k := range render.VendorParams[key] {
		if v, ok := obj[k]; ok && !isNull(v) {
			sub[k] = v
		}
	}
	if len(sub) == 0 {
		return nil
	}
	b, err := json.Marshal(sub)
	if err != nil {
		return typeError("data."+key, "a JSON object")
	}
	if err := render.CheckVendorParams(key, b); err != nil {
		return push.Errorf(push.CodeValidation, "%s", strings.TrimPrefix(err.Error(), render.ErrVendorParam.Error()+": "))
	}
	return nil
}

func vString(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	if jsondoc.IsPlainToken(raw) {
		return nil // the usual string, without encoding/json
	}
	var s string
	if !isKind(raw, '"') || json.Unmarshal(raw, &s) != nil {
		return typeError(path, "a string")
	}
	return nil
}

func vBool(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	if string(raw) == "true" || string(raw) == "false" {
		return nil
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return typeError(path, "a boolean")
	}
	return nil
}

func vStringList(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	var l []string
	if !isKind(raw, '[') || json.Unmarshal(raw, &l) != nil {
		return typeError(path, "an array of strings")
	}
	return nil
}

// plainStrings decodes raw, an array of plain string tokens with nothing between them but
// commas (what SDKs send), as json.Unmarshal into a []string would; ok is false for anything
// else, which the caller decodes in full.
func plainStrings(raw []byte) (list []string, ok bool) {
	if len(raw) < 2 || raw[0] != '[' {
		return nil, false
	}
	list = []string{}
	if len(raw) == 2 && raw[1] == ']' {
		return list, true
	}
	for i := 1; ; {
		start, end, plain := jsondoc.PlainString(raw, i)
		if !plain || end+1 >= len(raw) {
			return nil, false
		}
		list = append(list, string(raw[start:end]))
		switch raw[end+1] {
		case ',':
			i = end + 2
		case ']':
			return list, end+2 == len(raw)
		default:
			return nil, false
		}
	}
}

// number reads a JSON number; ok is false for any other type.
func number(raw json.RawMessage) (float64, bool) {
	if isKind(raw, '"') || isKind(raw, '{') || isKind(raw, '[') {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	return f, true
}

func vInt(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	f, ok := number(raw)
	if !ok {
		return typeError(path, "a number")
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		return push.Errorf(push.CodeValidation, "%s must be an integer such as 1", path)
	}
	return nil
}

func vBadge(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	if isKind(raw, '"') {
		var s string
		if json.Unmarshal(raw, &s) != nil || s != "Increment" {
			return push.Errorf(push.CodeValidation, `%s must be a number or "Increment"`, path)
		}
		return nil
	}
	f, ok := number(raw)
	if !ok {
		return typeError(path, `a number or "Increment"`)
	}
	if f < 0 || f != math.Trunc(f) || f > 1<<31 {
		return push.Errorf(push.CodeValidation, "%s must be a whole number of 0 or more", path)
	}
	return nil
}

func vPriority(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	f, ok := number(raw)
	if !ok {
		return typeError(path, "a number")
	}
	if f != 5 && f != 10 {
		return push.Errorf(push.CodeValidation, "%s must be 5 or 10", path)
	}
	return nil
}

func vPushMode(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	f, ok := number(raw)
	if !ok {
		return typeError(path, "a number")
	}
	if f != 0 && f != 1 {
		return push.Errorf(push.CodeValidation, "%s must be 0 (production) or 1 (test)", path)
	}
	return nil
}

// vVivoClassification: vivo's message class, 0 operational or 1 system (gateways.md §6.2).
func vVivoClassification(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	f, ok := number(raw)
	if !ok {
		return typeError(path, "a number")
	}
	if f != 0 && f != 1 {
		return push.Errorf(push.CodeValidation, "%s must be 0 (operational) or 1 (system)", path)
	}
	return nil
}

// vVendorCategory: a vendor's second-level message category, e.g. vivo "IM" (gateways.md
// §6.2, §7.2): upper-case letters and underscores. Whether the vendor knows it and whether it
// fits the message class is the vendor's to say (vivo 10096/10097).
func vVendorCategory(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	var s string
	if !isKind(raw, '"') || json.Unmarshal(raw, &s) != nil {
		return typeError(path, "a string")
	}
	if s == "" || len(s) > 32 || strings.TrimLeft(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != "" {
		return push.Errorf(push.CodeValidation, "%s must be an upper-case category name such as IM or MARKETING", path)
	}
	return nil
}

// vOppoNotifyLevel: OPPO's reminder level, 1 (notification bar), 2 (bar and lock screen) or
// 16 (bar, lock screen, banner, sound, vibration) (gateways.md §7.2; the values are from
// secondary sources).
func vOppoNotifyLevel(path string, raw json.RawMessage, _ *dataCtx) *push.Error {
	f, ok := number(raw)
	if !ok {
		return typeError(path, "a number")
	}
	if f != 1 && f != 2 && f != 16 {
		return push.Errorf(push.CodeValidation, "%s must be 1, 2 or 16", path)
	}
	return nil
}

var (
	pushTypes    = []string{"alert", "background"}
	apsPushTypes = []string{"background", "voip", "complication", "fileprovider", "mdm", "alert"}
)

func vPushType(path string, raw json.RawMessage, c *dataCtx) *push.Error {
	var s string
	if !isKind(raw, '"') || json.Unmarshal(raw, &s) != nil {
		return typeError(path, "a string")
	}
	allowed := pushTypes
	if c.apsForm {
		allowed = apsPushTypes
	}
	if !slices.Contains(allowed, s) {
		return push.Errorf(push.CodeValidation, "%s must be one of %s", path, strings.Join(allowed, ", "))
	}
	return nil
}

func vCollapseID(path string, raw json.RawMessage, c *dataCtx) *push.Error {
	if perr := vString(path, raw, c); perr != nil {
		return perr
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	if len(s) > maxCollapseID {
		return push.Errorf(push.CodeValidation, "%s must be at most %d bytes", path, maxCollapseID)
	}
	return nil
}

// alertObjectAttrs are the members of the iOS alert object (spec "iOS alert object").
// title-loc-key is a list of strings in the spec's table but a string for Apple: both pass.
var alertObjectAttrs = map[string]validator{
	"title":             vString,
	"title-loc-key":     vStringOrList,
	"title-loc-args":    vStringList,
	"subtitle":          vString,
	"subtitle-loc-key":  vString,
	"subtitle-loc-args": vStringList,
	"body":              vString,
	"action-loc-key":    vString,
	"loc-key":           vString,
	"loc-args":          vStringList,
	"launch-image":      vString,
	"summary-arg":       vString,
	"summary-arg-count": vInt,
}

func vStringOrList(path string, raw json.RawMessage, c *dataCtx) *push.Error {
	if isKind(raw, '"') {
		return vString(path, raw, c)
	}
	if perr := vStringList(path, raw, c); perr != nil {
		return typeError(path, "a string or an array of strings")
	}
	return nil
}

func vAlertIOS(path string, raw json.RawMessage, c *dataCtx) *push.Error {
	if isKind(raw, '"') {
		return vString(path, raw, c)
	}
	if !isKind(raw, '{') {
		return typeError(path, "a string or an alert object")
	}
	obj, err := object(raw)
	if err != nil {
		return typeError(path, "a string or an alert object")
	}
	for _, k := range sortedKeys(obj) {
		v := alertObjectAttrs[k]
		if v == nil {
			return push.Errorf(push.CodeValidation, "%s.%s is not an alert object attribute", path, k)
		}
		if isNull(obj[k]) {
			continue
		}
		if perr := v(path+"."+k, obj[k], c); perr != nil {
			return perr
		}
	}
	return nil
}

func vSound(path string, raw json.RawMessage, c *dataCtx) *push.Error {
	if isKind(raw, '"') {
		return vString(path, raw, c)
	}
	if !isKind(raw, '{') {
		return typeError(path, "a string or a sound object")
	}
	obj, err := object(raw)
	if err != nil {
		return typeError(path, "a string or a sound object")
	}
	for _, k := range sortedKeys(obj) {
		v, p := obj[k], path+"."+k
		if isNull(v) {
			continue
		}
		switch k {
		case "name":
			if perr := vString(p, v, c); perr != nil {
				return perr
			}
		case "critical":
			// A boolean per the spec; inside aps Apple's 0/1 number is accepted too.
			if f, ok := number(v); ok && c.inAPS {
				if f != 0 && f != 1 {
					return push.Errorf(push.CodeValidation, "%s must be true, false, 0 or 1", p)
				}
			} else if perr := vBool(p, v, c); perr != nil {
				return perr
			}
		case "volume":
			f, ok := number(v)
			if !ok {
				return typeError(p, "a number")
			}
			if f < 0 || f > 1 {
				return push.Errorf(push.CodeValidation, "%s must be between 0 and 1", p)
			}
		default:
			return push.Errorf(push.CodeValidation, "%s is not a sound object attribute (name, critical, volume)", p)
		}
	}
	return nil
}

func vAPS(path string, raw json.RawMessage, c *dataCtx) *push.Error {
	if !isKind(raw, '{') {
		return typeError(path, "a JSON object")
	}
	obj, err := object(raw)
	if err != nil {
		return typeError(path, "a JSON object")
	}
	in := *c
	in.inAPS = true
	for _, k := range sortedKeys(obj) {
		if v := apsAttrs[k]; v != nil && !isNull(obj[k]) {
			if perr := v(path+"."+k, obj[k], &in); perr != nil {
				return perr
			}
		}
	}
	return nil
}

func object(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if m, ok := jsondoc.Members(raw); ok {
		return m, nil
	}
	var m map[string]json.RawMessage
	err := json.Unmarshal(raw, &m)
	return m, err
}

func hasMember(m map[string]json.RawMessage, k string) bool {
	v, ok := m[k]
	return ok && !isNull(v)
}

// sortedKeys makes error reports deterministic: the first bad attribute in key order.
func sortedKeys(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
