package api

import (
	"context"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestAdminWebhook: an app's delivery-event webhook is set through the admin API and stored;
// the secret is never shown; a bad URL or secret is refused and changes nothing; url ""
// removes it.
func TestAdminWebhook(t *testing.T) {
	e := newEnv(t)
	path, h := "/admin/apps/"+e.app.ID, e.adminHeaders()
	const secret = "0123456789abcdef-secret"
	r := e.do("PUT", path, `{"webhook":{"url":"https://hooks.example.com/pushd","secret":"`+secret+`"}}`, h...)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"webhook":{"url":"https://hooks.example.com/pushd","secretSet":true}`) {
		t.Fatalf("set webhook: %d %s", r.Status, r.Body)
	}
	want := push.AppWebhook{URL: "https://hooks.example.com/pushd", Secret: secret}
	if got, err := e.st.GetApp(context.Background(), e.app.ID); err != nil || got.Webhook != want {
		t.Fatalf("stored webhook %+v, %v", got.Webhook, err)
	}
	for _, get := range []string{path, "/admin/apps"} {
		if r := e.do("GET", get, "", h...); r.Status != 200 || strings.Contains(string(r.Body), secret) || !strings.Contains(string(r.Body), `"secretSet":true`) {
			t.Fatalf("GET %s: %d %s", get, r.Status, r.Body)
		}
	}
	for _, bad := range []string{
		`{"webhook":{"url":"ftp://hooks.example.com/x"}}`,
		`{"webhook":{"url":"/relative"}}`,
		`{"webhook":{"url":"https://user:pw@hooks.example.com/x"}}`,
		`{"webhook":{"secret":"short"}}`,
		`{"webhook":{"url":"https://hooks.example.com/x","sekret":"0123456789abcdef"}}`,
		`{"webhook":{"url":"","secret":"0123456789abcdef-other"}}`,
	} {
		if r := e.do("PUT", path, bad, h...); r.Status != 400 || r.Code(t) != int(push.CodeValidation) {
			t.Errorf("%s: %d %s, want 400 code %d", bad, r.Status, r.Body, push.CodeValidation)
		}
	}
	if got, _ := e.st.GetApp(context.Background(), e.app.ID); got.Webhook != want {
		t.Fatalf("a refused change changed the webhook: %+v", got.Webhook)
	}
	// A new URL keeps the secret when none is given.
	if r := e.do("PUT", path, `{"webhook":{"url":"https://hooks.example.com/v2"}}`, h...); r.Status != 200 {
		t.Fatalf("move webhook: %d %s", r.Status, r.Body)
	}
	want.URL = "https://hooks.example.com/v2"
	if got, _ := e.st.GetApp(context.Background(), e.app.ID); got.Webhook != want {
		t.Fatalf("moved webhook %+v", got.Webhook)
	}
	if r := e.do("PUT", path, `{"webhook":{"url":""}}`, h...); r.Status != 200 || strings.Contains(string(r.Body), `"webhook"`) {
		t.Fatalf("remove webhook: %d %s", r.Status, r.Body)
	}
	if got, _ := e.st.GetApp(context.Background(), e.app.ID); got.Webhook != (push.AppWebhook{}) {
		t.Fatalf("removed webhook %+v", got.Webhook)
	}
	// A new app without a secret is refused.
	if r := e.do("POST", "/admin/apps", `{"name":"w","webhook":{"url":"https://hooks.example.com/x"}}`, h...); r.Status != 400 {
		t.Fatalf("create without a secret: %d %s", r.Status, r.Body)
	}
}
