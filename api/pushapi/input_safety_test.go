package pushapi

import (
	"context"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestPushTyposAndLaxJSONChangeNothing: a misspelled top-level parameter, and JSON that
// encoding/json reads but readers disagree on, are refused over HTTP with {code, error}, and
// no record, schedule or job exists afterwards. Before, each was accepted and the push went
// to every device of the app (the typo'd condition was dropped).
func TestPushTyposAndLaxJSONChangeNothing(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	deep := strings.Repeat(`{"a":`, 32) + "1" + strings.Repeat("}", 32)
	cases := []struct {
		name, path, body string
		code             int
		msg              string
	}{
		{"chanels", "/1.1/push", `{"data":{"alert":"x"},"chanels":["vip"]}`, int(push.CodeValidation), `did you mean "channels"?`},
		{"cql", "/1.1/push", `{"data":{"alert":"x"},"cql":"select * from _Installation where a=1"}`, int(push.CodeValidation), `"cql" is not a parameter`},
		{"wehre", "/1.1/push", `{"data":{"alert":"x"},"wehre":{"deviceType":"ios"}}`, int(push.CodeValidation), `did you mean "where"?`},
		{"expiration_intervall", "/1.1/push", `{"data":{"alert":"x"},"expiration_intervall":60}`, int(push.CodeValidation), `did you mean "expiration_interval"?`},
		{"Where in another case", "/1.1/push", `{"data":{"alert":"x"},"Where":{"deviceType":"ios"}}`, int(push.CodeValidation), `case-sensitive`},
		{"devices: vendr", "/1.1/push/devices", `{"device_type":"android","device_ids":["a"],"vendr":"mi","data":{"alert":"x"}}`, int(push.CodeValidation), `did you mean "vendor"?`},
		{"devices: flow_control", "/1.1/push/devices", `{"device_type":"ios","device_ids":["a"],"flow_control":1000,"data":{"alert":"x"}}`, int(push.CodeValidation), `flow_control is not a parameter`},
		{"duplicate where, the last one empty", "/1.1/push", `{"data":{"alert":"x"},"where":{"deviceType":"ios"},"where":{}}`, 107, `duplicate key "where"`},
		{"duplicate key in where", "/1.1/push", `{"data":{"alert":"x"},"where":{"channels":"vip","channels":"all"}}`, 107, `duplicate key "channels"`},
		{"invalid UTF-8", "/1.1/push", "{\"data\":{\"alert\":\"caf\xe9\"}}", 107, "invalid UTF-8"},
		{"lone surrogate", "/1.1/push/devices", `{"device_type":"ios","device_ids":["a"],"data":{"alert":"\ud83d"}}`, 107, "lone surrogate"},
		{"data too deep", "/1.1/push", `{"data":{"alert":"x","k":` + deep + `}}`, 107, "nested deeper than 32"},
		{"__proto__ in data", "/1.1/push", `{"data":{"alert":"x","__proto__":{"admin":true}}}`, 107, `"__proto__"`},
		{"constructor in data", "/1.1/push/devices", `{"device_type":"ios","device_ids":["a"],"data":{"alert":"x","ios":{"constructor":1}}}`, 107, `"constructor"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(app, master, "POST", c.path, c.body)
			if r.Status != 400 || r.Code(t) != c.code {
				t.Fatalf("%s: %d %s, want 400 code %d", c.body, r.Status, r.Body, c.code)
			}
			if msg, _ := r.JSON(t)["error"].(string); !strings.Contains(msg, c.msg) {
				t.Fatalf("%s: error %q does not contain %q", c.body, msg, c.msg)
			}
		})
	}
	if n := len(e.jobs()); n != 0 {
		t.Fatalf("%d jobs after refused pushes, want none", n)
	}
	count := 0
	if err := e.st.ListNotifications(context.Background(), app.ID, func(*push.Notification) error { count++; return nil }); err != nil {
		t.Fatal(err)
	}
	if count != 0 {
		t.Fatalf("%d records after refused pushes, want none", count)
	}
}
