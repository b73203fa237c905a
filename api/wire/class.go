package wire

import (
	"encoding/json"

	"github.com/pushd/pushd/push"
)

// checkClassData refuses a push whose message_class (class, "" when absent: nothing to
// check) contradicts the class its data.<vendor> fields give a vendor: vivo classification or
// category, OPPO category, Honor importance. Such a push would be capped and held by pushd as
// one class and shown by the vendor as the other (docs/decisions.md, "Message class").
func checkClassData(class string, data json.RawMessage) *push.Error {
	if class == "" {
		return nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil // checkData has answered
	}
	field := func(vendor, key string) (json.RawMessage, bool) {
		var obj map[string]json.RawMessage
		if raw, ok := top[vendor]; !ok || json.Unmarshal(raw, &obj) != nil {
			return nil, false
		}
		v, ok := obj[key]
		return v, ok && !isNull(v)
	}
	contradicts := func(path, says string) *push.Error {
		return push.Errorf(push.CodeValidation, "%s says %s, which contradicts message_class %s", path, says, class)
	}
	if v, ok := field(push.ChannelVivo, "classification"); ok {
		var n int
		if json.Unmarshal(v, &n) == nil && (n == 1) != (class == push.ClassSystem) {
			return contradicts("data.vivo.classification", map[int]string{0: "operational", 1: "system"}[n])
		}
	}
	for _, vendor := range []string{push.ChannelVivo, push.ChannelOppo} {
		if v, ok := field(vendor, "category"); ok {
			var c string
			if json.Unmarshal(v, &c) == nil && push.CategoryClass(c) != class {
				return contradicts("data."+vendor+".category", c+" ("+push.CategoryClass(c)+")")
			}
		}
	}
	if v, ok := field(push.ChannelHonor, "importance"); ok {
		var s string
		if json.Unmarshal(v, &s) == nil && (s == "LOW") != (class == push.ClassMarketing) {
			return contradicts("data.honor.importance", s)
		}
	}
	return nil
}
