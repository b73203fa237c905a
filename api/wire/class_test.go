package wire

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestWireMessageClass: message_class (a pushd extension) takes system and marketing on both
// push endpoints; any other value or type is refused naming it (code 1), and absent means
// "" (the app's messageClass).
func TestWireMessageClass(t *testing.T) {
	for _, c := range []string{push.ClassSystem, push.ClassMarketing} {
		r, perr := DecodePush([]byte(`{"data":{"alert":"x"},"message_class":"`+c+`"}`), push.EditionChina, "", testNow)
		if perr != nil || r.MessageClass != c {
			t.Errorf("push %s: %+v, %v", c, r, perr)
		}
		d, perr := DecodePushDevices([]byte(`{"data":{"alert":"x"},"device_type":"android","device_ids":["a"],"message_class":"`+c+`"}`), push.EditionChina, "", testNow)
		if perr != nil || d.MessageClass != c {
			t.Errorf("devices %s: %+v, %v", c, d, perr)
		}
	}
	if r, perr := DecodePush([]byte(`{"data":{"alert":"x"}}`), push.EditionChina, "", testNow); perr != nil || r.MessageClass != "" {
		t.Errorf("absent: %+v, %v", r, perr)
	}
	// A value that is no class is code 1; a value that is no string is code 111, as for every
	// string parameter; both name it.
	for _, v := range []string{`"promo"`, `"MARKETING"`, `""`, `0`, `["system"]`} {
		code := push.CodeValidation
		if !strings.HasPrefix(v, `"`) {
			code = push.CodeInvalidType
		}
		_, perr := DecodePush([]byte(`{"data":{"alert":"x"},"message_class":`+v+`}`), push.EditionChina, "", testNow)
		if perr == nil || perr.Code != code || !strings.Contains(perr.Message, "message_class") {
			t.Errorf("push message_class %s: %v, want code %d naming it", v, perr, code)
		}
		_, perr = DecodePushDevices([]byte(`{"data":{"alert":"x"},"device_type":"android","device_ids":["a"],"message_class":`+v+`}`), push.EditionChina, "", testNow)
		if perr == nil || perr.Code != code || !strings.Contains(perr.Message, "message_class") {
			t.Errorf("devices message_class %s: %v, want code %d naming it", v, perr, code)
		}
	}
}

// TestWireMessageClassContradictedByData: a push whose message_class contradicts the class
// its data.<vendor> fields give that vendor is refused naming both; agreeing fields, or no
// message_class (the app's default applies), pass.
func TestWireMessageClassContradictedByData(t *testing.T) {
	for _, c := range []struct {
		class, vendorData string
		refused           bool
	}{
		{"marketing", `"vivo":{"classification":1}`, true},
		{"system", `"vivo":{"classification":0}`, true},
		{"marketing", `"vivo":{"classification":0}`, false},
		{"marketing", `"vivo":{"category":"IM"}`, true},
		{"system", `"vivo":{"category":"MARKETING"}`, true},
		{"system", `"vivo":{"category":"ORDER"}`, false},
		{"marketing", `"oppo":{"category":"ACCOUNT"}`, true},
		{"marketing", `"oppo":{"category":"NEWS"}`, false},
		{"marketing", `"honor":{"importance":"NORMAL"}`, true},
		{"system", `"honor":{"importance":"LOW"}`, true},
		{"system", `"honor":{"importance":"NORMAL"}`, false},
		{"", `"vivo":{"classification":0}`, false},
	} {
		body := `{"data":{"alert":"x",` + c.vendorData + `}`
		if c.class != "" {
			body += `,"message_class":"` + c.class + `"`
		}
		body += `}`
		_, perr := DecodePush([]byte(body), push.EditionChina, "", testNow)
		switch {
		case c.refused && (perr == nil || perr.Code != push.CodeValidation || !strings.Contains(perr.Message, "message_class")):
			t.Errorf("%s: %v, want refused with code 1 naming message_class", body, perr)
		case !c.refused && perr != nil:
			t.Errorf("%s: %v, want accepted", body, perr)
		}
	}
	body := `{"data":{"alert":"x","honor":{"importance":"NORMAL"}},"device_type":"android","device_ids":["a"],"message_class":"marketing"}`
	if _, perr := DecodePushDevices([]byte(body), push.EditionChina, "", testNow); perr == nil || !strings.Contains(perr.Message, "message_class") {
		t.Errorf("devices push: %v, want refused", perr)
	}
}
