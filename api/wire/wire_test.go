package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	cn   = push.EditionChina
	intl = push.EditionInternational
)

type badCase struct {
	name string
	ed   push.Edition
	body string
	code push.Code
	msg  string // substring of the message
}

func runBad(t *testing.T, devices bool, cases []badCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ed := c.ed
			if ed == "" {
				ed = cn
			}
			var perr *push.Error
			var got any
			if devices {
				got, perr = DecodePushDevices([]byte(c.body), ed, "", testNow)
			} else {
				got, perr = DecodePush([]byte(c.body), ed, "", testNow)
			}
			if perr == nil {
				t.Fatalf("accepted: %+v", got)
			}
			if perr.Code != c.code || !strings.Contains(perr.Message, c.msg) {
				t.Fatalf("got %d %q, want %d containing %q", perr.Code, perr.Message, c.code, c.msg)
			}
		})
	}
}

func TestWirePushBad(t *testing.T) {
	big := `{"data":{"alert":"` + strings.Repeat("x", MaxBody) + `"}}`
	exact := `{"data":{"alert":"` + strings.Repeat("x", MaxBody-len(`{"data":{"alert":""}}`)) + `"}}`
	runBad(t, false, []badCase{
		{"body too large", "", big, push.CodeTooLarge, "below 4096"},
		{"body exactly 4096", "", exact, push.CodeTooLarge, "below 4096"},
		{"not an object", "", `["data"]`, push.CodeInvalidJSON, "JSON dictionary"},
		{"empty body", "", ``, push.CodeInvalidJSON, "JSON dictionary"},
		{"malformed", "", `{"data":`, push.CodeInvalidJSON, "JSON dictionary"},
		{"trailing garbage", "", `{"data":{"alert":"x"}} x`, push.CodeInvalidJSON, "JSON dictionary"},
		{"data missing", "", `{"where":{}}`, push.CodeMissingRequired, "data is required"},
		{"data null", "", `{"data":null}`, push.CodeMissingRequired, "data is required"},
		{"data not object", "", `{"data":"hi"}`, push.CodeInvalidType, "data must be a JSON object"},
		{"where not object", "", `{"data":{"alert":"x"},"where":"deviceType=ios"}`, push.CodeInvalidType, "where must be"},
		{"notification_id 17", "", `{"data":{"alert":"x"},"notification_id":"abcdefghijklmnopq"}`, push.CodeValidation, "notification_id must be at most 16"},
		{"notification_id symbol", "", `{"data":{"alert":"x"},"notification_id":"ab-c"}`, push.CodeValidation, "notification_id"},
		{"notification_id number", "", `{"data":{"alert":"x"},"notification_id":12}`, push.CodeInvalidType, "notification_id must be a string"},
		{"req_id 17", "", `{"data":{"alert":"x"},"req_id":"12345678901234567"}`, push.CodeValidation, "req_id must be at most 16"},
		{"req_id non-ascii", "", `{"data":{"alert":"x"},"req_id":"é1"}`, push.CodeValidation, "req_id"},
		{"prod bad", "", `{"data":{"alert":"x"},"prod":"production"}`, push.CodeValidation, `prod must be "dev" or "prod"`},
		{"topic not string", "", `{"data":{"alert":"x"},"topic":1}`, push.CodeInvalidType, "topic must be a string"},
		{"expiration_time past", "", `{"data":{"alert":"x"},"expiration_time":"2030-01-02T03:04:04Z"}`, push.CodeValidation, "expiration_time is in the past"},
		{"expiration_time now", "", `{"data":{"alert":"x"},"expiration_time":"2030-01-02T03:04:05Z"}`, push.CodeValidation, "in the past"},
		{"expiration_time before push_time", "", `{"data":{"alert":"x"},"push_time":"2030-01-03T00:00:00Z","expiration_time":"2030-01-02T12:00:00Z"}`, push.CodeValidation, "not after push_time"},
		{"expiration_time garbage", "", `{"data":{"alert":"x"},"expiration_time":"tomorrow"}`, push.CodeValidation, "expiration_time is not an ISO 8601"},
		{"push_time past the schedule keys (wraps to due now)", "", `{"data":{"alert":"x"},"push_time":"2300-01-01T00:00:00Z"}`, push.CodeValidation, "push_time must be before 2200-01-01"},
		{"both expirations", "", `{"data":{"alert":"x"},"expiration_time":"2031-01-01T00:00:00Z","expiration_interval":60}`, push.CodeValidation, "cannot both"},
		{"interval zero", "", `{"data":{"alert":"x"},"expiration_interval":0}`, push.CodeValidation, "expiration_interval must be between"},
		{"interval fraction", "", `{"data":{"alert":"x"},"expiration_interval":1.5}`, push.CodeInvalidType, "expiration_interval must be an integer"},
		{"interval string", "", `{"data":{"alert":"x"},"expiration_interval":"60"}`, push.CodeInvalidType, "integer"},
		{"interval huge", "", `{"data":{"alert":"x"},"expiration_interval":1e12}`, push.CodeValidation, "between"},
		{"push_time garbage", "", `{"data":{"alert":"x"},"push_time":"next monday"}`, push.CodeValidation, "push_time is not an ISO 8601"},
		{"push_time number", "", `{"data":{"alert":"x"},"push_time":1735689600}`, push.CodeInvalidType, "push_time must be an ISO 8601 string"},
		{"push_time bad date type", "", `{"data":{"alert":"x"},"push_time":{"__type":"Pointer","iso":"2030-01-03T00:00:00Z"}}`, push.CodeInvalidType, "push_time"},
		{"flow_control string", "", `{"data":{"alert":"x"},"flow_control":"2000"}`, push.CodeInvalidType, "flow_control must be an integer"},
		{"flow_control fraction", "", `{"data":{"alert":"x"},"flow_control":1500.5}`, push.CodeInvalidType, "flow_control must be an integer"},
		{"flow_control bool", "", `{"data":{"alert":"x"},"flow_control":true}`, push.CodeInvalidType, "flow_control"},
		{"flow_control huge", "", `{"data":{"alert":"x"},"flow_control":5000000000}`, push.CodeValidation, "at most"},
		{"channel bad char", "", `{"data":{"alert":"x"},"channels":["ok","a b"]}`, push.CodeInvalidChannel, `"a b"`},
		{"channel dollar", "", `{"data":{"alert":"x"},"channels":"$all"}`, push.CodeInvalidChannel, "invalid channel"},
		{"channel dot", "", `{"data":{"alert":"x"},"channels":"a.b"}`, push.CodeInvalidChannel, "invalid channel"},
		{"channel emoji", "", `{"data":{"alert":"x"},"channels":"news😀"}`, push.CodeInvalidChannel, "invalid channel"},
		{"channel hiragana", "", `{"data":{"alert":"x"},"channels":"にゅーす"}`, push.CodeInvalidChannel, "invalid channel"},
		{"channel compat ideograph", "", `{"data":{"alert":"x"},"channels":"\uF900"}`, push.CodeInvalidChannel, "invalid channel"},
		{"channels number", "", `{"data":{"alert":"x"},"channels":5}`, push.CodeInvalidType, "channels must be a string or an array"},
		{"channels array of numbers", "", `{"data":{"alert":"x"},"channels":[5]}`, push.CodeInvalidType, "channels"},

		// data attributes
		{"badge increment lower case", "", `{"data":{"alert":"x","badge":"increment"}}`, push.CodeValidation, `data.badge must be a number or "Increment"`},
		{"badge negative", "", `{"data":{"alert":"x","badge":-1}}`, push.CodeValidation, "data.badge"},
		{"badge fraction", "", `{"data":{"alert":"x","badge":1.5}}`, push.CodeValidation, "data.badge"},
		{"badge bool", "", `{"data":{"alert":"x","badge":true}}`, push.CodeInvalidType, "data.badge"},
		{"apns-priority 7", "", `{"data":{"alert":"x","apns-priority":7}}`, push.CodeValidation, "data.apns-priority must be 5 or 10"},
		{"apns-priority string", "", `{"data":{"alert":"x","apns-priority":"10"}}`, push.CodeInvalidType, "data.apns-priority must be a number"},
		{"push-type voip flat", "", `{"data":{"alert":"x","apns-push-type":"voip"}}`, push.CodeValidation, "data.apns-push-type must be one of alert, background"},
		{"push-type unknown aps form", "", `{"data":{"aps":{"alert":"x"},"apns-push-type":"location"}}`, push.CodeValidation, "must be one of background, voip"},
		{"push-type voip in ios flat", "", `{"data":{"alert":"x","ios":{"apns-push-type":"voip"}}}`, push.CodeValidation, "data.ios.apns-push-type"},
		{"sound volume 1.5", "", `{"data":{"alert":"x","sound":{"name":"a","volume":1.5}}}`, push.CodeValidation, "data.sound.volume must be between 0 and 1"},
		{"sound volume negative", "", `{"data":{"alert":"x","sound":{"volume":-0.1}}}`, push.CodeValidation, "data.sound.volume"},
		{"sound critical number flat", "", `{"data":{"alert":"x","sound":{"critical":1}}}`, push.CodeInvalidType, "data.sound.critical must be a boolean"},
		{"sound critical 2 in aps", "", `{"data":{"aps":{"alert":"x","sound":{"critical":2}}}}`, push.CodeValidation, "data.aps.sound.critical"},
		{"sound unknown key", "", `{"data":{"alert":"x","sound":{"loud":true}}}`, push.CodeValidation, "data.sound.loud is not a sound object attribute"},
		{"sound number", "", `{"data":{"alert":"x","sound":1}}`, push.CodeInvalidType, "data.sound"},
		{"alert number", "", `{"data":{"alert":1}}`, push.CodeInvalidType, "data.alert must be a string or an alert object"},
		{"alert object unknown key", "", `{"data":{"alert":{"body":"x","color":"red"}},"where":{"deviceType":"ios"}}`, push.CodeValidation, "data.alert.color is not an alert object attribute"},
		{"alert object wrong type", "", `{"data":{"alert":{"loc-args":"x"}},"where":{"deviceType":"ios"}}`, push.CodeInvalidType, "data.alert.loc-args must be an array of strings"},
		{"alert object count type", "", `{"data":{"ios":{"alert":{"summary-arg-count":"2"}}}}`, push.CodeInvalidType, "data.ios.alert.summary-arg-count"},
		{"alert object pinned android", "", `{"data":{"alert":{"body":"x"}},"where":{"deviceType":"android"}}`, push.CodeValidation, "only when every target is iOS"},
		{"title number", "", `{"data":{"alert":"x","title":2}}`, push.CodeInvalidType, "data.title must be a string"},
		{"collapse-id too long", "", `{"data":{"alert":"x","collapse-id":"` + strings.Repeat("c", 65) + `"}}`, push.CodeValidation, "data.collapse-id must be at most 64 bytes"},
		{"content-available string", "", `{"data":{"content-available":"1"}}`, push.CodeInvalidType, "data.content-available must be a number"},
		{"mutable-content fraction", "", `{"data":{"alert":"x","mutable-content":0.5}}`, push.CodeValidation, "data.mutable-content must be an integer"},
		{"url-args not list", "", `{"data":{"alert":"x","url-args":"a"}}`, push.CodeInvalidType, "data.url-args must be an array of strings"},
		{"thread-id number", "", `{"data":{"alert":"x","thread-id":1}}`, push.CodeInvalidType, "data.thread-id"},
		{"aps not object", "", `{"data":{"aps":"x"}}`, push.CodeInvalidType, "data.aps must be a JSON object"},
		{"aps badge bad", "", `{"data":{"aps":{"alert":"x","badge":"2"}}}`, push.CodeValidation, "data.aps.badge"},
		{"silent not bool", "", `{"data":{"alert":"x","silent":"true"}}`, push.CodeInvalidType, "data.silent must be a boolean"},
		{"action number", "", `{"data":{"alert":"x","action":1}}`, push.CodeInvalidType, "data.action"},
		{"android alert object", "", `{"data":{"alert":"x","android":{"alert":{"body":"x"}}}}`, push.CodeInvalidType, "data.android.alert must be a string"},
		{"platform not object", "", `{"data":{"alert":"x","ios":"x"}}`, push.CodeInvalidType, "data.ios must be a JSON object"},
		{"platform nested", "", `{"data":{"alert":"x","ios":{"android":{}}}}`, push.CodeValidation, "data.ios.android: platform objects cannot be nested"},
		{"unknown platform key huawei", "", `{"data":{"alert":"x","huawei":{"alert":"y"}}}`, push.CodeValidation, "data.huawei is not a platform key: use data.hms"},
		{"unknown platform key apns", "", `{"data":{"alert":"x","apns":{}}}`, push.CodeValidation, "use data.ios"},
		{"hms outside edition", intl, `{"data":{"alert":"x","hms":{"alert":"y"}}}`, push.CodeValidation, "data.hms: the hms platform is not available in the international edition"},
		{"vivo outside edition", intl, `{"data":{"alert":"x","vivo":{}}}`, push.CodeValidation, "international edition"},
		{"fcm outside edition", cn, `{"data":{"alert":"x","fcm":{}}}`, push.CodeValidation, "data.fcm: the fcm platform is not available in the china edition"},
		{"vivo pushMode 2", "", `{"data":{"alert":"x","vivo":{"pushMode":2}}}`, push.CodeValidation, "data.vivo.pushMode must be 0 (production) or 1 (test)"},
		{"vivo pushMode string", "", `{"data":{"alert":"x","vivo":{"pushMode":"1"}}}`, push.CodeInvalidType, "data.vivo.pushMode"},
		{"no alert anywhere", "", `{"data":{"title":"x","k":1}}`, push.CodeValidation, "data.alert is required"},
		{"no alert ios pinned", "", `{"data":{"title":"x","android":{"alert":"y"}},"where":{"deviceType":"ios"}}`, push.CodeValidation, "data.alert is required"},
		{"empty data", "", `{"data":{}}`, push.CodeValidation, "data.alert is required"},
	})
}

func TestWirePushGood(t *testing.T) {
	pt := time.Date(2030, 1, 3, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		ed     push.Edition
		header string
		body   string
		want   PushRequest
	}{
		{"minimal", cn, "", `{"data":{"alert":"hi"}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}}},
		{"header 0 means dev", cn, "0", `{"data":{"alert":"hi"}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "dev"}}},
		{"header 1 means prod", cn, "1", `{"data":{"alert":"hi"}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}}},
		{"explicit prod beats header", cn, "0", `{"data":{"alert":"hi"},"prod":"prod"}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}}},
		{"everything", cn, "", `{
			"data": {"alert": "hi", "badge": "Increment", "sound": {"name": "a", "critical": true, "volume": 0.5}},
			"where": {"deviceType": "android", "age": {"$gt": 3}},
			"channels": ["news", "体育", "a_b-c=d", "news"],
			"push_time": "2030-01-03T00:00:00Z",
			"expiration_interval": 3600,
			"notification_id": "Abc123", "req_id": "r1",
			"prod": "dev", "topic": "com.x", "apns_team_id": "TEAM",
			"flow_control": 5000, "_notificationChannel": "chat"}`,
			PushRequest{
				Common: Common{
					Data:               json.RawMessage(`{"alert":"hi","badge":"Increment","sound":{"name":"a","critical":true,"volume":0.5}}`),
					ExpiresAt:          pt.Add(time.Hour),
					ExpirationInterval: 3600,
					NotificationID:     "Abc123", ReqID: "r1", Prod: "dev", Topic: "com.x", APNsTeamID: "TEAM",
					NotificationChannel: "chat",
				},
				Where:       json.RawMessage(`{"deviceType":"android","age":{"$gt":3}}`),
				Channels:    []string{"news", "体育", "a_b-c=d"},
				PushTime:    &pt,
				Scheduled:   true,
				FlowControl: 5000,
			}},
		{"push_time under a minute is immediate, the interval counts from it", cn, "", `{"data":{"alert":"hi"},"push_time":"2030-01-02T03:05:04.999Z","expiration_interval":60}`,
			PushRequest{
				Common:   Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod", ExpiresAt: time.Date(2030, 1, 2, 3, 6, 4, 999000000, time.UTC), ExpirationInterval: 60},
				PushTime: ptr(time.Date(2030, 1, 2, 3, 5, 4, 999000000, time.UTC)),
			}},
		{"push_time a minute away is scheduled, typed date", cn, "", `{"data":{"alert":"hi"},"push_time":{"__type":"Date","iso":"2030-01-02T03:05:05.000Z"}}`,
			PushRequest{
				Common:    Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"},
				PushTime:  ptr(testNow.Add(time.Minute)),
				Scheduled: true,
			}},
		{"push_time with offset and no zone", cn, "", `{"data":{"alert":"hi"},"push_time":"2030-01-03T08:00:00+08:00","expiration_time":"2030-01-04T00:00:00"}`,
			PushRequest{
				Common:    Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod", ExpiresAt: time.Date(2030, 1, 4, 0, 0, 0, 0, time.UTC)},
				PushTime:  &pt,
				Scheduled: true,
			}},
		{"push_time on the last day schedules take", cn, "", `{"data":{"alert":"hi"},"push_time":"2199-12-31T23:59:59Z"}`,
			PushRequest{
				Common:    Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"},
				PushTime:  ptr(time.Date(2199, 12, 31, 23, 59, 59, 0, time.UTC)),
				Scheduled: true,
			}},
		{"flow_control below minimum", cn, "", `{"data":{"alert":"hi"},"flow_control":10}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}, FlowControl: 1000}},
		{"flow_control exponent", cn, "", `{"data":{"alert":"hi"},"flow_control":2e3}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}, FlowControl: 2000}},
		{"channels string, nulls absent, empty ids absent", cn, "", `{"data":{"alert":"hi"},"channels":"news","where":null,"req_id":"","topic":null}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod"}, Channels: []string{"news"}}},
		{"alert object needs iOS only", cn, "", `{"data":{"alert":{"title":"t","body":"b"}}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":{"title":"t","body":"b"}}`), Prod: "prod"}, NeedsIOSOnly: true}},
		{"alert object with where ios", cn, "", `{"data":{"alert":{"body":"b"}},"where":{"deviceType":{"$eq":"ios"}}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":{"body":"b"}}`), Prod: "prod"}, Where: json.RawMessage(`{"deviceType":{"$eq":"ios"}}`)}},
		{"alert object inside ios", cn, "", `{"data":{"alert":"plain","ios":{"alert":{"body":"b","title-loc-key":"K"}}}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"plain","ios":{"alert":{"body":"b","title-loc-key":"K"}}}`), Prod: "prod"}}},
		{"alert object overridden for every android platform", intl, "", `{"data":{"alert":{"body":"b"},"android":{"alert":"a"},"mi":{"alert":"a"},"fcm":{"alert":"a"}}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":{"body":"b"},"android":{"alert":"a"},"mi":{"alert":"a"},"fcm":{"alert":"a"}}`), Prod: "prod"}}},
		{"aps form", cn, "", `{"data":{"aps":{"alert":{"body":"b"},"badge":1,"sound":{"critical":1},"interruption-level":"active"},"apns-push-type":"voip","collapse-id":"c","apns-priority":5}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"aps":{"alert":{"body":"b"},"badge":1,"sound":{"critical":1},"interruption-level":"active"},"apns-push-type":"voip","collapse-id":"c","apns-priority":5}`), Prod: "prod"}}},
		{"background only", cn, "", `{"data":{"content-available":1,"apns-push-type":"background"}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"content-available":1,"apns-push-type":"background"}`), Prod: "prod"}}},
		{"android alert only", cn, "", `{"data":{"android":{"alert":"a","silent":true,"action":"com.x.A"}}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"android":{"alert":"a","silent":true,"action":"com.x.A"}}`), Prod: "prod"}}},
		{"all platforms china", cn, "", `{"data":{"alert":"a","title":"t","ios":{},"android":{},"mi":{},"hms":{"target_user_type":1},"mz":{},"vivo":{"pushMode":1},"oppo":{"badge":null},"xiaomi":"custom value"}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"a","title":"t","ios":{},"android":{},"mi":{},"hms":{"target_user_type":1},"mz":{},"vivo":{"pushMode":1},"oppo":{"badge":null},"xiaomi":"custom value"}`), Prod: "prod"}}},
		{"silent everywhere still renders for mi", cn, "", `{"data":{"alert":"a","silent":true}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"alert":"a","silent":true}`), Prod: "prod"}}},
		{"title-loc-key as string", cn, "", `{"data":{"ios":{"alert":{"title-loc-key":"K","loc-args":["a"],"summary-arg-count":2}}},"where":{"deviceType":"ios"}}`,
			PushRequest{Common: Common{Data: json.RawMessage(`{"ios":{"alert":{"title-loc-key":"K","loc-args":["a"],"summary-arg-count":2}}}`), Prod: "prod"}, Where: json.RawMessage(`{"deviceType":"ios"}`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, perr := DecodePush([]byte(c.body), c.ed, c.header, testNow)
			if perr != nil {
				t.Fatalf("refused: %v", perr)
			}
			if !reflect.DeepEqual(*got, c.want) {
				t.Errorf("got  %+v\nwant %+v", *got, c.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestWirePushDoesNotAliasBody(t *testing.T) {
	body := []byte(`{"data":{"alert":"hi"},"where":{"a":1}}`)
	r, perr := DecodePush(body, cn, "", testNow)
	if perr != nil {
		t.Fatal(perr)
	}
	for i := range body {
		body[i] = 'x'
	}
	if string(r.Data) != `{"alert":"hi"}` || string(r.Where) != `{"a":1}` {
		t.Errorf("decoded values alias the body: %s %s", r.Data, r.Where)
	}
}

func TestWirePushMergedWhere(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"data":{"alert":"x"}}`, ``},
		{`{"data":{"alert":"x"},"where":{"a":1}}`, `{"a":1}`},
		{`{"data":{"alert":"x"},"channels":"n"}`, `{"channels":{"$in":["n"]}}`},
		{`{"data":{"alert":"x"},"channels":["n","m"],"where":{}}`, `{"channels":{"$in":["n","m"]}}`},
		{`{"data":{"alert":"x"},"channels":"n","where":{"a":1}}`, `{"a":1,"channels":{"$in":["n"]}}`},
		{`{"data":{"alert":"x"},"channels":"n","where":{"channels":"m"}}`, `{"$and":[{"channels":"m"},{"channels":{"$in":["n"]}}]}`},
		// "" is the broadcast channel: every device, so no condition (no installation stores "").
		{`{"data":{"alert":"x"},"channels":""}`, ``},
		{`{"data":{"alert":"x"},"channels":["n",""],"where":{"a":1}}`, `{"a":1}`},
	}
	for _, c := range cases {
		r, perr := DecodePush([]byte(c.body), cn, "", testNow)
		if perr != nil {
			t.Fatal(perr)
		}
		got := r.MergedWhere()
		if string(got) != c.want {
			t.Errorf("%s: got %s, want %s", c.body, got, c.want)
		}
		if len(got) > 0 && !json.Valid(got) {
			t.Errorf("%s: invalid JSON %s", c.body, got)
		}
	}
}

// TestWireChannelsInAsEncodingJSON: the channels condition is what encoding/json writes for
// it, for valid names (CJK too) and for strings that need escapes.
func TestWireChannelsInAsEncodingJSON(t *testing.T) {
	for _, chans := range [][]string{
		{"n"}, {"news", "c1", "a_b-c=d"}, {"新闻", "频道9"},
		{`q"uote`, `back\slash`, "<b>&", "line\u2028sep", "\x00", string([]byte{0xff})},
	} {
		want, err := json.Marshal(map[string]any{"channels": map[string]any{"$in": chans}})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendChannelsIn(nil, chans); string(got) != string(want) {
			t.Errorf("%q: %s, encoding/json %s", chans, got, want)
		}
	}
}

func TestWireDevicesBad(t *testing.T) {
	ids := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = `"t"`
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	runBad(t, true, []badCase{
		{"not an object", "", `"x"`, push.CodeInvalidJSON, "JSON dictionary"},
		{"device_type missing", "", `{"device_ids":["a"],"data":{"alert":"x"}}`, push.CodeMissingRequired, "device_type is required"},
		{"device_type windows", "", `{"device_type":"windows","device_ids":["a"],"data":{"alert":"x"}}`, push.CodeValidation, `device_type must be "ios" or "android"`},
		{"device_type number", "", `{"device_type":1,"device_ids":["a"],"data":{"alert":"x"}}`, push.CodeInvalidType, "device_type must be a string"},
		{"device_ids missing", "", `{"device_type":"ios","data":{"alert":"x"}}`, push.CodeMissingRequired, "device_ids is required"},
		{"device_ids zero", "", `{"device_type":"ios","device_ids":[],"data":{"alert":"x"}}`, push.CodeValidation, "device_ids must list 1 to 500 ids, got 0"},
		{"device_ids 501", "", `{"device_type":"ios","device_ids":` + ids(501) + `,"data":{"alert":"x"}}`, push.CodeValidation, "got 501"},
		{"device_ids string", "", `{"device_type":"ios","device_ids":"a","data":{"alert":"x"}}`, push.CodeInvalidType, "device_ids must be an array of strings"},
		{"device_ids numbers", "", `{"device_type":"ios","device_ids":[1],"data":{"alert":"x"}}`, push.CodeInvalidType, "device_ids"},
		{"device_ids empty id", "", `{"device_type":"ios","device_ids":["a",""],"data":{"alert":"x"}}`, push.CodeValidation, "empty id"},
		{"data missing", "", `{"device_type":"ios","device_ids":["a"]}`, push.CodeMissingRequired, "data is required"},
		{"vendor on ios", "", `{"device_type":"ios","device_ids":["a"],"vendor":"mi","data":{"alert":"x"}}`, push.CodeValidation, "vendor is only for Android"},
		{"vendor unknown", "", `{"device_type":"android","device_ids":["a"],"vendor":"nokia","data":{"alert":"x"}}`, push.CodeValidation, "unknown vendor"},
		{"vendor outside edition", intl, `{"device_type":"android","device_ids":["a"],"vendor":"hms","data":{"alert":"x"}}`, push.CodeValidation, "not available in the international edition"},
		{"fcm in china", cn, `{"device_type":"android","device_ids":["a"],"vendor":"fcm","data":{"alert":"x"}}`, push.CodeValidation, "not available in the china edition"},
		{"device_profile bad", "", `{"device_type":"android","device_ids":["a"],"device_profile":"1abc","data":{"alert":"x"}}`, push.CodeValidation, "device_profile"},
		{"where refused", "", `{"device_type":"ios","device_ids":["a"],"where":{},"data":{"alert":"x"}}`, push.CodeValidation, "where is not a parameter of /1.1/push/devices"},
		{"push_time refused", "", `{"device_type":"ios","device_ids":["a"],"push_time":"2030-01-03T00:00:00Z","data":{"alert":"x"}}`, push.CodeValidation, "push_time is not a parameter"},
		{"channels refused", "", `{"device_type":"ios","device_ids":["a"],"channels":"n","data":{"alert":"x"}}`, push.CodeValidation, "channels is not a parameter"},
		{"alert object to android", "", `{"device_type":"android","device_ids":["a"],"data":{"alert":{"body":"x"}}}`, push.CodeValidation, "only when every target is iOS"},
		{"no alert for the vendor", "", `{"device_type":"android","vendor":"mi","device_ids":["a"],"data":{"alert":"x","mi":{"alert":null}}}`, push.CodeValidation, "data.alert is required for mi"},
		{"no alert for ios", "", `{"device_type":"ios","device_ids":["a"],"data":{"android":{"alert":"x"}}}`, push.CodeValidation, "data.alert is required for ios"},
		{"fcm reserved key", intl, `{"device_type":"android","vendor":"fcm","device_ids":["a"],"data":{"alert":"x","from":"me"}}`, push.CodeValidation, `reserved by the gateway: "from"`},
		{"expiration in the past", "", `{"device_type":"ios","device_ids":["a"],"data":{"alert":"x"},"expiration_time":"2020-01-01T00:00:00Z"}`, push.CodeValidation, "in the past"},
		{"req_id bad", "", `{"device_type":"ios","device_ids":["a"],"data":{"alert":"x"},"req_id":"a b"}`, push.CodeValidation, "req_id"},
	})
}

func TestWireDevicesGood(t *testing.T) {
	cases := []struct {
		name    string
		ed      push.Edition
		body    string
		want    DevicesRequest
		channel string
	}{
		{"ios", cn, `{"device_type":"ios","device_ids":["t1","t2","t1"],"data":{"alert":{"body":"b"}},"prod":"dev","topic":"com.x","apns_team_id":"T","device_profile":"cert_1","expiration_interval":60,"notification_id":"n1","req_id":"r1"}`,
			DevicesRequest{
				Common: Common{Data: json.RawMessage(`{"alert":{"body":"b"}}`), Prod: "dev", Topic: "com.x", APNsTeamID: "T",
					ExpiresAt: testNow.Add(time.Minute), ExpirationInterval: 60, NotificationID: "n1", ReqID: "r1"},
				DeviceType: "ios", DeviceIDs: []string{"t1", "t2"}, DeviceProfile: "cert_1",
			}, push.ChannelAPNs},
		{"android own channel", cn, `{"device_type":"android","device_ids":["iid"],"data":{"alert":"x"},"channel":"chat"}`,
			DevicesRequest{
				Common:     Common{Data: json.RawMessage(`{"alert":"x"}`), Prod: "prod", NotificationChannel: "chat"},
				DeviceType: "android", DeviceIDs: []string{"iid"}, Channel: "chat",
			}, push.ChannelDirect},
		{"android vendor name normalized", cn, `{"device_type":"android","device_ids":["r"],"vendor":"HMS","device_profile":"_default","data":{"alert":"x"},"_notificationChannel":"n","channel":"c"}`,
			DevicesRequest{
				Common:     Common{Data: json.RawMessage(`{"alert":"x"}`), Prod: "prod", NotificationChannel: "n"},
				DeviceType: "android", DeviceIDs: []string{"r"}, Vendor: "hms", DeviceProfile: "_default", Channel: "c",
			}, push.ChannelHMS},
		{"silent to oppo is accepted (targets fail)", cn, `{"device_type":"android","device_ids":["r"],"vendor":"oppo","data":{"alert":"x","silent":true}}`,
			DevicesRequest{
				Common:     Common{Data: json.RawMessage(`{"alert":"x","silent":true}`), Prod: "prod"},
				DeviceType: "android", DeviceIDs: []string{"r"}, Vendor: "oppo",
			}, push.ChannelOppo},
		{"fcm international", intl, `{"device_type":"android","device_ids":["r"],"vendor":"fcm","data":{"alert":"x","fcm":{"title":"t"}}}`,
			DevicesRequest{
				Common:     Common{Data: json.RawMessage(`{"alert":"x","fcm":{"title":"t"}}`), Prod: "prod"},
				DeviceType: "android", DeviceIDs: []string{"r"}, Vendor: "fcm",
			}, push.ChannelFCM},
		{"500 ids", cn, `{"device_type":"ios","device_ids":` + idList(500) + `,"data":{"alert":"x"}}`,
			DevicesRequest{Common: Common{Data: json.RawMessage(`{"alert":"x"}`), Prod: "prod"}, DeviceType: "ios", DeviceIDs: idSlice(500)}, push.ChannelAPNs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, perr := DecodePushDevices([]byte(c.body), c.ed, "", testNow)
			if perr != nil {
				t.Fatalf("refused: %v", perr)
			}
			if !reflect.DeepEqual(*got, c.want) {
				t.Errorf("got  %+v\nwant %+v", *got, c.want)
			}
			if ch := got.DeliveryChannel(); ch != c.channel {
				t.Errorf("DeliveryChannel = %q, want %q", ch, c.channel)
			}
		})
	}
}

func idSlice(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = "t" + strconv.Itoa(i)
	}
	return s
}

func idList(n int) string {
	b, _ := json.Marshal(idSlice(n))
	return string(b)
}

// TestWireDevicesBodyLimitLeavesOutDeviceIDs: 500 device tokens alone are some 33 KB, so the
// 4096-byte rule applies to the rest of a /1.1/push/devices body.
func TestWireDevicesBodyLimitLeavesOutDeviceIDs(t *testing.T) {
	ids := make([]string, MaxDeviceIDs)
	for i := range ids {
		ids[i] = fmt.Sprintf("%064x", i)
	}
	list, _ := json.Marshal(ids)
	body := `{"device_type":"ios","device_ids":` + string(list) + `,"data":{"alert":"hi"}}`
	r, perr := DecodePushDevices([]byte(body), push.EditionChina, "", testNow)
	if perr != nil || len(r.DeviceIDs) != MaxDeviceIDs {
		t.Fatalf("500 tokens in a %d-byte body: %v", len(body), perr)
	}
	big := `{"device_type":"ios","device_ids":["aa"],"data":{"alert":"` + strings.Repeat("x", MaxBody) + `"}}`
	if _, perr := DecodePushDevices([]byte(big), push.EditionChina, "", testNow); perr == nil || perr.Code != push.CodeTooLarge {
		t.Fatalf("content of 4096 bytes or more: %v, want code 413", perr)
	}
}
