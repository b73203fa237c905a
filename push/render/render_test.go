package render

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

var (
	testNow    = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	testExpiry = testNow.Add(time.Hour)
)

func testOpts() Options {
	return Options{Now: testNow, Topic: "com.example.app", TeamID: "TEAM1", NotificationChannel: "chat", NotificationID: "n1"}
}

func TestRenderIOS(t *testing.T) {
	cases := []struct {
		name     string
		data     string
		body     string
		pushType string
		priority int
		collapse string
	}{
		{"alert string", `{"alert":"hi"}`, `{"aps":{"alert":"hi"}}`, "alert", 0, ""},
		{"title and alert string", `{"alert":"hi","title":"T"}`, `{"aps":{"alert":{"title":"T","body":"hi"}}}`, "alert", 0, ""},
		{"alert object gets title", `{"alert":{"body":"b","loc-key":"K"},"title":"T"}`,
			`{"aps":{"alert":{"title":"T","body":"b","loc-key":"K"}}}`, "alert", 0, ""},
		{"alert object keeps own title", `{"alert":{"title":"A","body":"b"},"title":"T"}`,
			`{"aps":{"alert":{"title":"A","body":"b"}}}`, "alert", 0, ""},
		{"all aps attributes in order",
			`{"target-content-id":"tc","url-args":["a"],"mutable-content":1,"content-available":1,"category":"c","thread-id":"th","sound":"s.caf","badge":3,"alert":"hi"}`,
			`{"aps":{"alert":"hi","badge":3,"sound":"s.caf","thread-id":"th","category":"c","content-available":1,"mutable-content":1,"url-args":["a"],"target-content-id":"tc"}}`,
			"alert", 0, ""},
		{"badge Increment dropped", `{"alert":"hi","badge":"Increment"}`, `{"aps":{"alert":"hi"}}`, "alert", 0, ""},
		{"sound object critical to number", `{"alert":"hi","sound":{"name":"x","critical":true,"volume":0.5}}`,
			`{"aps":{"alert":"hi","sound":{"critical":1,"name":"x","volume":0.5}}}`, "alert", 0, ""},
		{"background", `{"content-available":1,"k":1}`, `{"aps":{"content-available":1},"k":1}`, "background", 5, ""},
		{"headers leave the body", `{"alert":"hi","collapse-id":"c1","apns-priority":10,"apns-push-type":"alert"}`,
			`{"aps":{"alert":"hi"}}`, "alert", 10, "c1"},
		{"custom kept android dropped", `{"alert":"hi","silent":true,"action":"a","_notificationChannel":"x","z":{"a":[1, 2]},"b":"s"}`,
			`{"aps":{"alert":"hi"},"b":"s","z":{"a":[1,2]}}`, "alert", 0, ""},
		{"aps form", `{"aps":{"alert":{"body":"b"},"badge":2,"interruption-level":"active"},"apns-push-type":"voip","k":"v"}`,
			`{"aps":{"alert":{"body":"b"},"badge":2,"interruption-level":"active"},"k":"v"}`, "voip", 0, ""},
		{"aps form wins over flat", `{"alert":"flat","badge":1,"aps":{"alert":"native"}}`,
			`{"aps":{"alert":"native","badge":1}}`, "alert", 0, ""},
		{"aps form null removes", `{"alert":"flat","badge":1,"aps":{"badge":null}}`, `{"aps":{"alert":"flat"}}`, "alert", 0, ""},
		{"ios override shallow", `{"alert":"def","badge":1,"k":1,"ios":{"alert":"ios","k":null},"android":{"alert":"and"},"mi":{"x":1}}`,
			`{"aps":{"alert":"ios","badge":1}}`, "alert", 0, ""},
		{"ios aps form inside ios", `{"alert":"android text","ios":{"aps":{"alert":"ios text"}}}`,
			`{"aps":{"alert":"ios text"}}`, "alert", 0, ""},
		{"html not escaped", `{"alert":"a<b>&c"}`, `{"aps":{"alert":"a<b>&c"}}`, "alert", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts()
			opts.Expiry = testExpiry
			m, err := Render(json.RawMessage(c.data), push.ChannelAPNs, opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if string(m.Body) != c.body {
				t.Errorf("body\n got %s\nwant %s", m.Body, c.body)
			}
			if m.PushType != c.pushType || m.Priority != c.priority || m.CollapseID != c.collapse {
				t.Errorf("headers: got type %q prio %d collapse %q, want %q %d %q", m.PushType, m.Priority, m.CollapseID, c.pushType, c.priority, c.collapse)
			}
			if m.Topic != "com.example.app" || m.TeamID != "TEAM1" || !m.Expiration.Equal(testExpiry) || m.Channel != push.ChannelAPNs {
				t.Errorf("message fields: %+v", m)
			}
			if !json.Valid(m.Body) {
				t.Errorf("invalid JSON %s", m.Body)
			}
		})
	}
}

func TestRenderDirect(t *testing.T) {
	cases := []struct {
		name, data, body string
		silent           bool
		channel          string
	}{
		{"defaults", `{"alert":"hi","title":"T","badge":1,"sound":"x","k":[1]}`,
			`{"_notificationChannel":"chat","alert":"hi","k":[1],"title":"T"}`, false, "chat"},
		{"data channel wins", `{"alert":"hi","_notificationChannel":"own","silent":true,"action":"com.x.A"}`,
			`{"_notificationChannel":"own","action":"com.x.A","alert":"hi","silent":true}`, true, "own"},
		{"android override", `{"alert":{"body":"ios only"},"android":{"alert":"hi","silent":false},"ios":{"x":1}}`,
			`{"_notificationChannel":"chat","alert":"hi","silent":false}`, false, "chat"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Render(json.RawMessage(c.data), push.ChannelDirect, testOpts())
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if string(m.Body) != c.body || m.Silent != c.silent || m.AndroidChannel != c.channel {
				t.Errorf("got %s silent=%v channel=%q, want %s %v %q", m.Body, m.Silent, m.AndroidChannel, c.body, c.silent, c.channel)
			}
		})
	}
}

func TestRenderFCM(t *testing.T) {
	cases := []struct {
		name, data, body string
		expiry           time.Time
		priority         int
	}{
		{"notification", `{"alert":"See you","title":"Ana","conv":"42","n":{"a":1},"collapse-id":"c"}`,
			`{"notification":{"title":"Ana","body":"See you"},"data":{"conv":"42","n":"{\"a\":1}"},"android":{"priority":"high","ttl":"3600s","collapse_key":"c","notification":{"channel_id":"chat","tag":"n1"}}}`,
			testExpiry, 10},
		{"no expiry no custom", `{"alert":"x","fcm":{"_notificationChannel":""}}`,
			`{"notification":{"body":"x"},"android":{"priority":"high","notification":{"tag":"n1"}}}`, time.Time{}, 10},
		{"silent", `{"alert":"x","title":"t","fcm":{"silent":true,"k":2}}`,
			`{"data":{"alert":"x","title":"t","_nid":"n1","k":"2"},"android":{"priority":"normal","ttl":"3600s"}}`, testExpiry, 5},
		{"ttl capped", `{"alert":"x"}`,
			`{"notification":{"body":"x"},"android":{"priority":"high","ttl":"2419200s","notification":{"channel_id":"chat","tag":"n1"}}}`,
			testNow.Add(90 * 24 * time.Hour), 10},
		{"ttl rounds up", `{"alert":"x"}`,
			`{"notification":{"body":"x"},"android":{"priority":"high","ttl":"2s","notification":{"channel_id":"chat","tag":"n1"}}}`,
			testNow.Add(1500 * time.Millisecond), 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts()
			opts.Expiry = c.expiry
			m, err := Render(json.RawMessage(c.data), push.ChannelFCM, opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if string(m.Body) != c.body || m.Priority != c.priority {
				t.Errorf("got %s prio %d\nwant %s prio %d", m.Body, m.Priority, c.body, c.priority)
			}
			// The sender splices the token: the body must be a JSON object without one.
			var msg map[string]any
			if err := json.Unmarshal(m.Body, &msg); err != nil {
				t.Fatal(err)
			}
			if _, ok := msg["token"]; ok {
				t.Error("token in body")
			}
		})
	}
}

func TestRenderVendor(t *testing.T) {
	cases := []struct {
		name, data, channel string
		want                VendorBody
	}{
		{"mi notification", `{"alert":"hi","title":"T","k":1,"badge":3,"ios":{"alert":"x"}}`, push.ChannelMi,
			VendorBody{Title: "T", Alert: "hi", NotificationChannel: "chat", NotificationID: "n1", Custom: json.RawMessage(`{"k":1}`)}},
		{"mi silent", `{"alert":"hi","silent":true}`, push.ChannelMi,
			VendorBody{Alert: "hi", Silent: true, NotificationChannel: "chat", NotificationID: "n1"}},
		{"hms params", `{"alert":"hi","hms":{"target_user_type":1,"c":true}}`, push.ChannelHMS,
			VendorBody{Alert: "hi", NotificationChannel: "chat", NotificationID: "n1", Custom: json.RawMessage(`{"c":true}`), Params: json.RawMessage(`{"target_user_type":1}`)}},
		{"vivo pushMode", `{"alert":"def","pushMode":1,"vivo":{"alert":"v","title":"vt","pushMode":1,"_notificationChannel":"vc"}}`, push.ChannelVivo,
			VendorBody{Title: "vt", Alert: "v", NotificationChannel: "vc", NotificationID: "n1", Params: json.RawMessage(`{"pushMode":1}`)}},
		{"top-level pushMode is custom", `{"alert":"a","pushMode":1}`, push.ChannelVivo,
			VendorBody{Alert: "a", NotificationChannel: "chat", NotificationID: "n1", Custom: json.RawMessage(`{"pushMode":1}`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Render(json.RawMessage(c.data), c.channel, testOpts())
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			var got VendorBody
			if err := json.Unmarshal(m.Body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v (%s)", got, c.want, m.Body)
			}
			if m.Channel != c.channel || m.Silent != c.want.Silent || m.AndroidChannel != c.want.NotificationChannel {
				t.Errorf("message fields %+v", m)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	cases := []struct {
		name, data, channel string
		expiry              time.Time
		want                error
	}{
		{"silent oppo", `{"alert":"x","silent":true}`, push.ChannelOppo, time.Time{}, ErrNoPassThrough},
		{"silent vivo", `{"alert":"x","vivo":{"silent":true}}`, push.ChannelVivo, time.Time{}, ErrNoPassThrough},
		{"silent mz", `{"alert":"x","silent":true}`, push.ChannelMz, time.Time{}, ErrNoPassThrough},
		{"no alert android", `{"title":"x"}`, push.ChannelDirect, time.Time{}, ErrNoContent},
		{"alert removed by override", `{"alert":"x","mi":{"alert":null}}`, push.ChannelMi, time.Time{}, ErrNoContent},
		{"title only ios", `{"title":"t","k":1}`, push.ChannelAPNs, time.Time{}, ErrNoContent},
		{"no alert ios", `{"badge":1}`, push.ChannelAPNs, time.Time{}, ErrNoContent},
		{"alert object android", `{"alert":{"body":"x"}}`, push.ChannelFCM, time.Time{}, ErrAlertObject},
		{"expired", `{"alert":"x"}`, push.ChannelAPNs, testNow, ErrExpired},
		{"fcm reserved", `{"alert":"x","from":"me"}`, push.ChannelFCM, time.Time{}, ErrReservedKey},
		{"fcm reserved prefix", `{"alert":"x","google.x":"me"}`, push.ChannelFCM, time.Time{}, ErrReservedKey},
		{"not an object", `[1]`, push.ChannelAPNs, time.Time{}, ErrBadData},
		{"bad type", `{"alert":1}`, push.ChannelDirect, time.Time{}, ErrBadData},
		{"bad badge", `{"alert":"x","badge":"increment"}`, push.ChannelAPNs, time.Time{}, ErrBadData},
		{"unknown channel", `{"alert":"x"}`, "web", time.Time{}, ErrUnknownChannel},
		{"too large", `{"alert":"` + string(make([]byte, 0)) + longString(4100) + `"}`, push.ChannelAPNs, time.Time{}, ErrTooLarge},
		{"too large once sent (apns2 escapes & as \\u0026)", `{"alert":"` + strings.Repeat("&", 100) + longString(3950) + `"}`, push.ChannelAPNs, time.Time{}, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts()
			opts.Expiry = c.expiry
			m, err := Render(json.RawMessage(c.data), c.channel, opts)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, %v; want %v", m, err, c.want)
			}
		})
	}
}

func longString(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}

func TestRenderPlatformKey(t *testing.T) {
	want := map[string]string{"apns": "ios", "direct": "android", "fcm": "fcm", "mi": "mi", "hms": "hms",
		"mz": "mz", "vivo": "vivo", "oppo": "oppo", "web": ""}
	for ch, k := range want {
		if got := PlatformKey(ch); got != k {
			t.Errorf("PlatformKey(%q) = %q, want %q", ch, got, k)
		}
	}
}
