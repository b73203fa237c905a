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
