package pushapi

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestPushBadInputChangesNothing sends every bad input the push issue lists: each gets a
// clear {code, error}, and no record, no schedule and no job exists afterwards.
func TestPushBadInputChangesNothing(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil) // china edition
	big := fmt.Sprintf(`{"data":{"alert":%q}}`, strings.Repeat("x", 4096))
	ids := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("%q", fmt.Sprint(i)) // short: 501 ids must fit below 4096 bytes
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	cases := []struct {
		name, path, body string
		status, code     int
	}{
		{"body of 4096 bytes or more", "/1.1/push", big, 413, 413},
		{"body not a JSON object", "/1.1/push", `["data"]`, 400, 107},
		{"body not JSON", "/1.1/push", `{"data":`, 400, 107},
		{"data missing", "/1.1/push", `{"where":{}}`, 400, 113},
		{"data not an object", "/1.1/push", `{"data":"hello"}`, 400, 111},
		{"notification_id of 17 characters", "/1.1/push", `{"data":{"alert":"x"},"notification_id":"abcdefghij1234567"}`, 400, 1},
		{"notification_id not alphanumeric", "/1.1/push", `{"data":{"alert":"x"},"notification_id":"ab-c"}`, 400, 1},
		{"req_id of 17 characters", "/1.1/push", `{"data":{"alert":"x"},"req_id":"abcdefghij1234567"}`, 400, 1},
		{"req_id not alphanumeric", "/1.1/push", `{"data":{"alert":"x"},"req_id":"a b"}`, 400, 1},
		{"no device_ids", "/1.1/push/devices", `{"device_type":"ios","device_ids":[],"data":{"alert":"x"}}`, 400, 1},
		{"501 device_ids", "/1.1/push/devices", `{"device_type":"ios","device_ids":` + ids(501) + `,"data":{"alert":"x"}}`, 400, 1},
		{"device_type windows", "/1.1/push/devices", `{"device_type":"windows","device_ids":["a"],"data":{"alert":"x"}}`, 400, 1},
		{"badge increment in lower case", "/1.1/push", `{"data":{"alert":"x","badge":"increment"}}`, 400, 1},
		{"apns-priority 7", "/1.1/push", `{"data":{"alert":"x","apns-priority":7}}`, 400, 1},
		{"push type not allowed", "/1.1/push", `{"data":{"alert":"x","apns-push-type":"voip"}}`, 400, 1},
		{"sound volume 1.5", "/1.1/push", `{"data":{"alert":"x","sound":{"name":"a","volume":1.5}}}`, 400, 1},
		{"expiration_time in the past", "/1.1/push", `{"data":{"alert":"x"},"expiration_time":"2020-01-01T00:00:00Z"}`, 400, 1},
		{"unparseable push_time", "/1.1/push", `{"data":{"alert":"x"},"push_time":"tomorrow"}`, 400, 1},
		{"flow_control not an integer", "/1.1/push", `{"data":{"alert":"x"},"flow_control":"fast"}`, 400, 111},
		{"unknown platform key", "/1.1/push", `{"data":{"alert":"x","huawei":{"alert":"y"}}}`, 400, 1},
		{"platform key outside the edition", "/1.1/push", `{"data":{"alert":"x","fcm":{"alert":"y"}}}`, 400, 1},
		{"where that does not parse", "/1.1/push", `{"data":{"alert":"x"},"where":{"badge":{"$frobnicate":1}}}`, 400, 300},
		{"relative time without ago", "/1.1/push", `{"data":{"alert":"x"},"where":{"updatedAt":{"$gt":{"$relativeTime":"7 days"}}}}`, 400, 300},
		{"bad channel name", "/1.1/push", `{"data":{"alert":"x"},"channels":["a b"]}`, 400, 112},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(app, master, "POST", c.path, c.body)
			if r.Status != c.status {
				t.Fatalf("status %d (%s), want %d", r.Status, r.Body, c.status)
			}
			if got := r.Code(t); got != c.code {
				t.Fatalf("code %d (%s), want %d", got, r.Body, c.code)
			}
		})
	}
	if n := len(e.jobs()); n != 0 {
		t.Fatalf("%d jobs after bad inputs, want none", n)
	}
	count := 0
	if err := e.st.ListNotifications(context.Background(), app.ID, func(*push.Notification) error { count++; return nil }); err != nil {
		t.Fatal(err)
	}
	sched, err := e.st.ListScheduled(context.Background(), app.ID)
	if err != nil {
		t.Fatal(err)
	}
	if count != 0 || len(sched) != 0 {
		t.Fatalf("%d records and %d schedules after bad inputs, want none", count, len(sched))
	}
}
