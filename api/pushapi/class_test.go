package pushapi

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestPushMessageClassOnJobAndRecord: message_class travels on the job and the record of both
// push endpoints (absent: "", the app's default); a bad one is refused and stores nothing.
func TestPushMessageClassOnJobAndRecord(t *testing.T) {
	e := newEnv(t)
	app := e.newApp(nil)
	r := e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"sale"},"message_class":"marketing"}`)
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	oid := r.JSON(t)["objectId"].(string)
	r = e.do(app, master, "POST", "/1.1/push/devices", `{"device_type":"android","device_ids":["d1"],"data":{"alert":"x"},"message_class":"system"}`)
	if r.Status != 200 {
		t.Fatalf("devices push: %d %s", r.Status, r.Body)
	}
	r = e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"x"}}`)
	if r.Status != 200 {
		t.Fatalf("push: %d %s", r.Status, r.Body)
	}
	jobs := e.jobs()
	if len(jobs) != 3 || jobs[0].MessageClass != push.ClassMarketing || jobs[1].MessageClass != push.ClassSystem || jobs[2].MessageClass != "" {
		t.Fatalf("jobs %+v, want marketing, system, \"\"", jobs)
	}
	if rec := e.do(app, master, "GET", "/1.1/tables/Notifications/"+oid, "").JSON(t); rec["message_class"] != push.ClassMarketing {
		t.Fatalf("record %v lacks message_class", rec)
	}
	r = e.do(app, master, "POST", "/1.1/push", `{"data":{"alert":"x"},"message_class":"promo"}`)
	if r.Status != 400 || r.Code(t) != int(push.CodeValidation) || !strings.Contains(string(r.Body), "message_class") {
		t.Fatalf("bad class: %d %s", r.Status, r.Body)
	}
	if n := len(e.jobs()); n != 3 {
		t.Fatalf("%d jobs after a refused push, want 3", n)
	}
}
