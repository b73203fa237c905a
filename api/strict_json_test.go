package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// strictJSONBodies are bodies encoding/json reads but the API refuses (107): each would be
// stored or acted on differently by different readers.
var strictJSONBodies = []struct{ name, body, msg string }{
	{"duplicate key", `{"deviceType":"android","installationId":"s-1","deviceType":"ios"}`, `duplicate key`},
	{"duplicate key by escape", `{"deviceType":"android","installationId":"s-1","\u0069nstallationId":"s-2"}`, `duplicate key`},
	{"duplicate nested key", `{"deviceType":"android","installationId":"s-1","prefs":{"a":1,"a":2}}`, `duplicate key "a"`},
	{"invalid UTF-8", "{\"deviceType\":\"android\",\"installationId\":\"s-1\",\"name\":\"caf\xe9\"}", "invalid UTF-8"},
	{"invalid UTF-8 in a key", "{\"deviceType\":\"android\",\"installationId\":\"s-1\",\"prefs\":{\"\xff\":1}}", "invalid UTF-8"},
	{"lone surrogate", `{"deviceType":"android","installationId":"s-1","name":"\ud800"}`, "lone surrogate"},
	{"lone surrogate in a channel", `{"deviceType":"android","installationId":"s-1","channels":["\udfff"]}`, "lone surrogate"},
	{"too deep", `{"deviceType":"android","installationId":"s-1","prefs":` + strings.Repeat("[", 34) + strings.Repeat("]", 34) + `}`, "nested deeper than 32"},
	{"__proto__", `{"deviceType":"android","installationId":"s-1","prefs":{"__proto__":{"admin":true}}}`, `"__proto__"`},
	{"constructor at the top", `{"deviceType":"android","installationId":"s-1","constructor":1}`, `"constructor"`},
}

// TestAPIStrictJSONInstallations: every strict-JSON refusal is 400 {107, error} on create and
// update, and nothing is stored or changed.
func TestAPIStrictJSONInstallations(t *testing.T) {
	e := newEnv(t)
	oid, _ := e.create(`{"deviceType":"android","installationId":"keep-1","name":"before"}`)
	before := e.get(oid)
	for _, c := range strictJSONBodies {
		t.Run(c.name, func(t *testing.T) {
			for _, req := range []struct{ method, path string }{
				{"POST", "/1.1/installations"},
				{"PUT", "/1.1/installations/" + oid},
			} {
				body := c.body
				if req.method == "PUT" { // no id fields: an update may not change them
					body = strings.Replace(body, `"deviceType":"android","installationId":"s-1",`, `"title":"x",`, 1)
					body = strings.Replace(body, `"title":"x","deviceType":"ios"`, `"title":"x","title":"y"`, 1)
					body = strings.Replace(body, `"title":"x","\u0069nstallationId":"s-2"`, `"title":"x","\u0074itle":"y"`, 1)
				}
				r := e.do(req.method, req.path, body, e.appHeaders()...)
				if r.Status != 400 || r.Code(t) != 107 || !strings.Contains(r.JSON(t)["error"].(string), c.msg) {
					t.Fatalf("%s %s %q: %d %s, want 400 code 107 containing %q", req.method, req.path, body, r.Status, r.Body, c.msg)
				}
			}
		})
	}
	if n := e.count(e.app.ID, 16); n != 1 {
		t.Fatalf("%d installations after refused bodies, want 1", n)
	}
	if after := e.get(oid); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("installation changed by refused updates: %v, was %v", after, before)
	}
}

// TestAPIStrictJSONAdmin: the admin API reads its bodies with the same rule.
func TestAPIStrictJSONAdmin(t *testing.T) {
	e := newEnv(t)
	for _, body := range []string{
		`{"name":"a","name":"b"}`,
		`{"name":"a","settings":{"callsPerMinute":600,"callsPerMinute":9000}}`,
		"{\"name\":\"caf\xe9\"}",
		`{"name":"\ud800"}`,
		`{"name":"a","__proto__":{}}`,
	} {
		r := e.do("POST", "/admin/apps", body, e.adminHeaders()...)
		if r.Status != 400 || r.Code(t) != 107 {
			t.Fatalf("POST /admin/apps %q: %d %s, want 400 code 107", body, r.Status, r.Body)
		}
	}
	apps, err := e.st.ListApps(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 1 {
		t.Fatalf("%d apps after refused bodies, want only the test app", len(apps))
	}
}
