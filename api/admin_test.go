package api

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

func TestAdminDisabledWithoutToken(t *testing.T) {
	e := newEnv(t, func(c *Config, _ *Deps) { c.AdminToken = "" })
	r := e.do("GET", "/admin/apps", "", "Authorization", "Bearer ")
	if r.Status != 403 || r.Code(t) != 403 || !strings.Contains(string(r.Body), "PUSHD_ADMIN_TOKEN") {
		t.Fatalf("disabled admin: %d %s", r.Status, r.Body)
	}
}

func TestAdminApps(t *testing.T) {
	e := newEnv(t, func(_ *Config, d *Deps) {
		d.CredentialValidators = map[string]CredentialValidator{
			"apns": func(_ context.Context, _ string, raw []byte) ([]byte, error) {
				if strings.Contains(string(raw), "bad") {
					return nil, errors.New("key id missing")
				}
				return raw, nil
			},
		}
	})
	if r := e.do("GET", "/admin/apps", ""); r.Status != 401 || r.Code(t) != 401 {
		t.Fatalf("no token: %d %s", r.Status, r.Body)
	}
	if r := e.do("GET", "/admin/apps", "", "Authorization", "Bearer wrong"); r.Status != 401 {
		t.Fatalf("wrong token: %d", r.Status)
	}
	h := e.adminHeaders()
	r := e.do("POST", "/admin/apps", `{"name":"shop","settings":{"edition":"international","callsPerMinute":1200}}`, h...)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	id, key, mk := m["appId"].(string), m["appKey"].(string), m["masterKey"].(string)
	if len(id) != 24 || len(key) != 32 || len(mk) != 32 || key == mk {
		t.Fatalf("created %s", r.Body)
	}
	set := m["settings"].(map[string]any)
	if set["edition"] != "international" || set["callsPerMinute"] != float64(1200) || set["buckets"] != float64(256) || set["clientPush"] != false || set["dailyVolume"] != float64(1_000_000) {
		t.Fatalf("settings %v", set)
	}
	// The keys work at once.
	if r := e.do("GET", "/1.1/installations", "", HeaderAppID, id, HeaderKey, mk+",master"); r.Status != 200 {
		t.Fatalf("new master key: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{"/admin/apps/" + id, "/admin/apps"} {
		r := e.do("GET", path, "", h...)
		if r.Status != 200 || strings.Contains(string(r.Body), key) || strings.Contains(string(r.Body), mk) || !strings.Contains(string(r.Body), id) {
			t.Fatalf("GET %s: %d %s (secrets must not be echoed)", path, r.Status, r.Body)
		}
	}
	r = e.do("PUT", "/admin/apps/"+id, `{"name":"shop2","settings":{"clientPush":true,"dailyVolume":5}}`, h...)
	if r.Status != 200 || strings.Contains(string(r.Body), key) {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	got, err := e.st.GetApp(context.Background(), id)
	if err != nil || got.Name != "shop2" || !got.Settings.ClientPush || got.Settings.DailyVolume != 5 || got.Settings.CallsPerMinute != 1200 || got.AppKey != key {
		t.Fatalf("stored app %+v %v", got.Settings, err)
	}
	bad := []struct {
		method, path, body string
		status, code       int
	}{
		{"POST", "/admin/apps", `{}`, 400, 1},
		{"POST", "/admin/apps", `{"name":"x","settings":{"buckets":3}}`, 400, 1},
		{"POST", "/admin/apps", `{"name":"x","settings":{"edition":"mars"}}`, 400, 1},
		{"POST", "/admin/apps", `{"name":"x","settings":{"callsPerMinute":9601}}`, 400, 1},
		{"POST", "/admin/apps", `{"name":"x","settings":{"callsPerMinute":0}}`, 400, 1},
		{"POST", "/admin/apps", `{"name":"x","extra":1}`, 400, 1},
		{"POST", "/admin/apps", `{"NAME":"x"}`, 400, 1}, // names are exact, not case-folded
		{"POST", "/admin/apps", `{"name":"x","settings":{"CallsPerMinute":5}}`, 400, 1},
		{"PUT", "/admin/apps/" + id, `{"Settings":{"clientPush":true}}`, 400, 1},
		{"POST", "/admin/apps", `{"name":"` + strings.Repeat("名", 129) + `"}`, 400, 1},
		{"POST", "/admin/apps", `[1]`, 400, 107},
		{"PUT", "/admin/apps/" + id, `{"settings":{"buckets":512}}`, 400, 117},
		{"PUT", "/admin/apps/" + id, `{"settings":{"dailyVolume":0}}`, 400, 1},
		{"PUT", "/admin/apps/nope", `{}`, 404, 101},
		{"GET", "/admin/apps/nope", ``, 404, 101},
		{"PUT", "/admin/apps/" + id + "/credentials/fcm", `{}`, 400, 1},
		{"PUT", "/admin/apps/" + id + "/credentials/apns", `{"k":"bad"}`, 400, 1},
		{"PUT", "/admin/apps/" + id + "/credentials/apns", `"x"`, 400, 107},
	}
	for _, c := range bad {
		r := e.do(c.method, c.path, c.body, h...)
		if r.Status != c.status || r.Code(t) != c.code {
			t.Errorf("%s %s %s: got %d %s, want %d code %d", c.method, c.path, c.body, r.Status, r.Body, c.status, c.code)
		}
	}
	if r := e.do("POST", "/admin/apps", `{"name":"`+strings.Repeat("名", 128)+`"}`, h...); r.Status != 201 {
		t.Errorf("a name of 128 CJK characters (384 bytes): %d %s", r.Status, r.Body)
	}
	r = e.do("PUT", "/admin/apps/"+id+"/credentials/apns", `{"keyId":"K","secret":"s3cr3t"}`, h...)
	if r.Status != 200 || strings.Contains(string(r.Body), "s3cr3t") {
		t.Fatalf("credential: %d %s", r.Status, r.Body)
	}
	r = e.do("GET", "/admin/apps/"+id, "", h...)
	if strings.Contains(string(r.Body), "s3cr3t") || !strings.Contains(string(r.Body), `"credentials":["apns"]`) {
		t.Fatalf("app view leaks or lacks credential kinds: %s", r.Body)
	}
	got, _ = e.st.GetApp(context.Background(), id)
	if !strings.Contains(string(got.Credentials["apns"]), "s3cr3t") {
		t.Fatalf("credential not stored")
	}
}

func TestAdminSettingsInvalidateAuthCache(t *testing.T) {
	e := newEnv(t)
	// Warm the cache, then change a setting through the admin API: the next request sees it.
	e.do("GET", "/1.1/installations/x", "", e.appHeaders()...)
	app, _ := e.srv.apps.get(context.Background(), e.app.ID)
	if app.Settings.ClientPush {
		t.Fatal("clientPush on by default")
	}
	if r := e.do("PUT", "/admin/apps/"+e.app.ID, `{"settings":{"clientPush":true}}`, e.adminHeaders()...); r.Status != 200 {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	app, _ = e.srv.apps.get(context.Background(), e.app.ID)
	if !app.Settings.ClientPush {
		t.Fatal("cache not invalidated")
	}
}

func TestAdminApplySettingsDefaults(t *testing.T) {
	s, perr := ApplySettings(push.DefaultSettings(), nil, true)
	if perr != nil || s != push.DefaultSettings() {
		t.Fatalf("%v %v", s, perr)
	}
	a := NewApp("n", s, time.Unix(1, 5))
	if a.CreatedAt != time.Unix(1, 0).UTC() {
		t.Fatalf("createdAt %v", a.CreatedAt)
	}
}
