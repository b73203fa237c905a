package api

import (
	"context"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestAdminMessageClass: an app's default message class and marketing rules are set through
// the admin API, stored and shown; bad values are refused with code 1 naming the field and
// change nothing.
func TestAdminMessageClass(t *testing.T) {
	e := newEnv(t)
	path, h := "/admin/apps/"+e.app.ID, e.adminHeaders()
	body := `{"settings":{"messageClass":"marketing","marketing":{"dailyCap":3,"quietHours":{"from":"22:00","to":"08:00","tz":"Asia/Shanghai"}}}}`
	r := e.do("PUT", path, body, h...)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"messageClass":"marketing"`) ||
		!strings.Contains(string(r.Body), `"marketing":{"dailyCap":3,"quietHours":{"from":"22:00","to":"08:00","tz":"Asia/Shanghai"}}`) {
		t.Fatalf("set: %d %s", r.Status, r.Body)
	}
	want := push.MarketingRules{DailyCap: 3, QuietHours: push.QuietHours{From: "22:00", To: "08:00", TZ: "Asia/Shanghai"}}
	got, err := e.st.GetApp(context.Background(), e.app.ID)
	if err != nil || got.Settings.MessageClass != push.ClassMarketing || got.Settings.Marketing != want {
		t.Fatalf("stored %+v, %v", got.Settings, err)
	}
	for _, c := range []struct{ body, names string }{
		{`{"settings":{"messageClass":"promo"}}`, "messageClass"},
		{`{"settings":{"messageClass":""}}`, "messageClass"},
		{`{"settings":{"marketing":{"dailyCap":-1}}}`, "dailyCap"},
		{`{"settings":{"marketing":{"dailyCap":1000}}}`, "dailyCap"},
		{`{"settings":{"marketing":{"quietHours":{"from":"22:00","to":"8:00"}}}}`, "quietHours"},
		{`{"settings":{"marketing":{"quietHours":{"from":"24:00","to":"08:00"}}}}`, "quietHours"},
		{`{"settings":{"marketing":{"quietHours":{"from":"08:00","to":"08:00"}}}}`, "quietHours"},
		{`{"settings":{"marketing":{"quietHours":{"from":"22:00","to":"08:00","tz":"Mars/Base"}}}}`, "tz"},
		{`{"settings":{"marketing":{"quietHours":{"from":"22:00"}}}}`, "quietHours"},
	} {
		r := e.do("PUT", path, c.body, h...)
		if r.Status != 400 || r.Code(t) != int(push.CodeValidation) || !strings.Contains(string(r.Body), c.names) {
			t.Errorf("%s: %d %s, want 400 code 1 naming %s", c.body, r.Status, r.Body, c.names)
		}
	}
	if got, _ := e.st.GetApp(context.Background(), e.app.ID); got.Settings.MessageClass != push.ClassMarketing || got.Settings.Marketing != want {
		t.Fatalf("a refused change changed the settings: %+v", got.Settings)
	}
	// system is the default, stored as such; {} clears the rules.
	if r := e.do("PUT", path, `{"settings":{"messageClass":"system","marketing":{}}}`, h...); r.Status != 200 {
		t.Fatalf("reset: %d %s", r.Status, r.Body)
	}
	if got, _ := e.st.GetApp(context.Background(), e.app.ID); got.Settings.MessageClass != "" || got.Settings.Marketing != (push.MarketingRules{}) {
		t.Fatalf("after reset: %+v", got.Settings)
	}
}
