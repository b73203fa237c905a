package wire

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// paramValues are valid values of every accepted top-level parameter, for bodies that hold
// the base parameters plus one more.
var paramValues = map[string]string{
	"data":                 `{"alert":"x"}`,
	"where":                `{"deviceType":"ios"}`,
	"channels":             `["news"]`,
	"push_time":            `"2030-01-03T00:00:00Z"`,
	"expiration_time":      `"2030-01-04T00:00:00Z"`,
	"expiration_interval":  `3600`,
	"notification_id":      `"n1"`,
	"req_id":               `"r1"`,
	"prod":                 `"dev"`,
	"topic":                `"com.x"`,
	"apns_team_id":         `"TEAM"`,
	"flow_control":         `2000`,
	"_notificationChannel": `"chat"`,
	"device_type":          `"ios"`,
	"device_ids":           `["a"]`,
	"device_profile":       `"cert"`,
	"channel":              `"chat"`,
	"vendor":               `"mi"`,
	"dry_run":              `true`,
	"channel_policy":       `"own_first"`,
	"message_class":        `"marketing"`,
}

type endpoint struct {
	path   string
	params []string
	base   []string // the parameters every body holds
	decode func(body []byte) *push.Error
}

var endpoints = []endpoint{
	{pathPush, pushParams, []string{"data"}, func(b []byte) *push.Error {
		_, perr := DecodePush(b, cn, "", testNow)
		return perr
	}},
	{pathDevices, devicesParams, []string{"data", "device_type", "device_ids"}, func(b []byte) *push.Error {
		_, perr := DecodePushDevices(b, cn, "", testNow)
		return perr
	}},
}

// body builds a JSON object of the endpoint's base parameters plus key: value.
func (e endpoint) body(key, value string) []byte {
	members := []string{}
	for _, k := range e.base {
		if k != key {
			members = append(members, fmt.Sprintf("%q:%s", k, paramValues[k]))
		}
	}
	if e.path == pathDevices && key == "vendor" {
		members = slices.DeleteFunc(members, func(m string) bool { return strings.HasPrefix(m, `"device_type"`) })
		members = append(members, `"device_type":"android"`)
	}
	members = append(members, fmt.Sprintf("%q:%s", key, value))
	return []byte("{" + strings.Join(members, ",") + "}")
}

// typos are the misspellings of name a client makes: a letter dropped, doubled, swapped,
// another case, a hyphen for an underscore, a space around it, the plural or singular.
func typos(name string) []string {
	out := []string{
		name[:len(name)-1],
		name + name[len(name)-1:],
		strings.ToUpper(name[:1]) + name[1:],
		strings.ToUpper(name),
		name + " ",
		" " + name,
		name + "s",
	}
	if len(name) > 3 {
		i := len(name) / 2
		out = append(out, name[:i-1]+name[i:i+1]+name[i-1:i]+name[i+1:])
	}
	if strings.Contains(name, "_") {
		out = append(out, strings.ReplaceAll(name, "_", "-"), strings.ReplaceAll(name, "_", ""))
	}
	return out
}

// TestWireParamsEveryAcceptedKey: each parameter an endpoint accepts is accepted with a
// valid value, so the lists are the ones the decoders read.
func TestWireParamsEveryAcceptedKey(t *testing.T) {
	for _, e := range endpoints {
		for _, k := range e.params {
			t.Run(e.path+"/"+k, func(t *testing.T) {
				if perr := e.decode(e.body(k, paramValues[k])); perr != nil {
					t.Fatalf("%s refused: %v", e.body(k, paramValues[k]), perr)
				}
			})
		}
	}
}

// TestWireParamsTypoInEveryKey: a misspelling of each accepted key is refused, naming the
// misspelled key, on both endpoints (a typo was ignored and the push sent to every device).
func TestWireParamsTypoInEveryKey(t *testing.T) {
	for _, e := range endpoints {
		// The other endpoint's parameters are typos here too (channels on devices...).
		keys := slices.Concat(pushParams, devicesParams)
		for _, k := range keys {
			for _, typo := range typos(k) {
				if slices.Contains(e.params, typo) {
					continue // another parameter of this endpoint (channels → channel)
				}
				t.Run(fmt.Sprintf("%s/%q", e.path, typo), func(t *testing.T) {
					b := e.body(typo, paramValues[k])
					perr := e.decode(b)
					if perr == nil {
						t.Fatalf("%s accepted", b)
					}
					if perr.Code != push.CodeValidation || !strings.Contains(perr.Message, "is not a parameter of "+e.path) {
						t.Fatalf("%s: got %v, want code %d naming the parameter", b, perr, push.CodeValidation)
					}
					if !strings.Contains(perr.Message, fmt.Sprintf("%q", typo)) && !strings.HasPrefix(perr.Message, typo+" ") {
						t.Fatalf("%s: %q does not name %q", b, perr.Message, typo)
					}
				})
			}
		}
	}
}

func TestWireParamsRefusals(t *testing.T) {
	for _, c := range []struct {
		name    string
		devices bool
		body    string
		msg     string
	}{
		{"chanels", false, `{"data":{"alert":"x"},"chanels":["x"]}`, `"chanels" is not a parameter of /1.1/push: did you mean "channels"?`},
		{"the retired cql", false, `{"data":{"alert":"x"},"cql":"select * from _Installation"}`, `"cql" is not a parameter of /1.1/push`},
		{"wehre", false, `{"data":{"alert":"x"},"wehre":{"deviceType":"ios"}}`, `did you mean "where"?`},
		{"expiration_intervall", false, `{"data":{"alert":"x"},"expiration_intervall":60}`, `did you mean "expiration_interval"?`},
		{"Data for data", false, `{"Data":{"alert":"x"}}`, `"Data" is not a parameter of /1.1/push: did you mean "data"? (names are case-sensitive)`},
		{"a null typo is still a typo", false, `{"data":{"alert":"x"},"chanels":null}`, `"chanels"`},
		{"devices: flow_control", true, `{"device_type":"ios","device_ids":["a"],"data":{"alert":"x"},"flow_control":2000}`, "flow_control is not a parameter of /1.1/push/devices (it is one of /1.1/push)"},
		{"devices: devce_ids", true, `{"device_type":"ios","device_ids":["a"],"devce_ids":["b"],"data":{"alert":"x"}}`, `did you mean "device_ids"?`},
		{"devices: vendors", true, `{"device_type":"android","device_ids":["a"],"vendors":"mi","data":{"alert":"x"}}`, `did you mean "vendor"?`},
		{"long unknown name cut", false, `{"data":{"alert":"x"},"` + strings.Repeat("z", 300) + `":1}`, `"` + strings.Repeat("z", 64) + `..."`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var perr *push.Error
			if c.devices {
				_, perr = DecodePushDevices([]byte(c.body), cn, "", testNow)
			} else {
				_, perr = DecodePush([]byte(c.body), cn, "", testNow)
			}
			if perr == nil || perr.Code != push.CodeValidation || !strings.Contains(perr.Message, c.msg) {
				t.Fatalf("got %v, want code %d containing %q", perr, push.CodeValidation, c.msg)
			}
		})
	}
}

// TestWireStrictJSON: JSON encoding/json reads but a strict reader refuses is 107, on both
// endpoints, at the top level and inside data and where.
func TestWireStrictJSON(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 32) + "1" + strings.Repeat("}", 32)
	for _, c := range []struct{ name, body, msg string }{
		{"duplicate top-level key", `{"data":{"alert":"x"},"data":{"alert":"y"}}`, `duplicate key "data"`},
		{"duplicate where", `{"data":{"alert":"x"},"where":{"deviceType":"ios"},"where":{}}`, `duplicate key "where"`},
		{"duplicate key in data", `{"data":{"alert":"x","alert":"y"}}`, `duplicate key "alert"`},
		{"duplicate key in where", `{"data":{"alert":"x"},"where":{"deviceType":"ios","deviceType":"android"}}`, `duplicate key "deviceType"`},
		{"invalid UTF-8 in alert", "{\"data\":{\"alert\":\"caf\xe9\"}}", "invalid UTF-8"},
		{"invalid UTF-8 in a key", "{\"data\":{\"alert\":\"x\",\"k\xff\":1}}", "invalid UTF-8"},
		{"lone surrogate in alert", `{"data":{"alert":"\ud83d"}}`, "lone surrogate"},
		{"lone surrogate in a channel", `{"data":{"alert":"x"},"channels":["\udc00"]}`, "lone surrogate"},
		{"data deeper than 32", `{"data":{"alert":"x","k":` + deep + `}}`, "nested deeper than 32"},
		{"__proto__ in data", `{"data":{"alert":"x","__proto__":{"isAdmin":true}}}`, `"__proto__"`},
		{"constructor in where", `{"data":{"alert":"x"},"where":{"constructor":{"prototype":1}}}`, `"constructor"`},
		{"__proto__ at the top", `{"data":{"alert":"x"},"__proto__":1}`, `"__proto__"`},
	} {
		for _, e := range endpoints {
			body := c.body
			if e.path == pathDevices {
				body = `{"device_type":"ios","device_ids":["a"],` + strings.TrimPrefix(body, "{")
			}
			t.Run(e.path+"/"+c.name, func(t *testing.T) {
				perr := e.decode([]byte(body))
				if perr == nil || perr.Code != push.CodeInvalidJSON || !strings.Contains(perr.Message, c.msg) {
					t.Fatalf("%s: got %v, want code %d containing %q", body, perr, push.CodeInvalidJSON, c.msg)
				}
			})
		}
	}
	// At the limit: data's members have depth 1, so 31 more levels fit.
	ok := `{"data":{"alert":"x","k":` + strings.Repeat(`{"a":`, 31) + "1" + strings.Repeat("}", 31) + `}}`
	if _, perr := DecodePush([]byte(ok), cn, "", testNow); perr != nil {
		t.Fatalf("data at the depth limit refused: %v", perr)
	}
}
