package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// putRaw stores an installation as an older release did, without this API's checks.
func (e *testEnv) putRaw(oid string, doc map[string]any) {
	e.t.Helper()
	inst, err := buildInstallation(oid, doc, e.now, e.now)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.PutInstallation(context.Background(), e.app.ID, e.app.Settings.Buckets, inst); err != nil {
		e.t.Fatal(err)
	}
}

func wantCode1(t *testing.T, r resp, what, text string) {
	t.Helper()
	m := r.JSON(t)
	if r.Status != 400 || m["code"] != float64(push.CodeValidation) || !strings.Contains(m["error"].(string), text) {
		t.Fatalf("%s: %d %s, want 400 code %d containing %q", what, r.Status, r.Body, push.CodeValidation, text)
	}
}

// TestInstallationVendorKnownOnly: vendor must be a known vendor of the app's edition on
// create, upsert and update, refused with code 1 and nothing changed; the original's
// spellings (HMS, meizu, xiaomi) are accepted as given.
func TestInstallationVendorKnownOnly(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/1.1/installations", `{"deviceType":"android","installationId":"v1","vendor":"nokia","registrationId":"r1"}`, e.appHeaders()...)
	wantCode1(t, r, "create nokia", `unknown vendor "nokia": use one of mi, hms, mz, vivo, oppo, honor`)
	r = e.do("POST", "/1.1/installations", `{"deviceType":"android","installationId":"v1","vendor":"fcm","registrationId":"r1"}`, e.appHeaders()...)
	wantCode1(t, r, "create fcm in china", "vendor fcm is not available in the china edition")
	if n := e.count(e.app.ID, e.app.Settings.Buckets); n != 0 {
		t.Fatalf("%d installations stored after refused creates", n)
	}
	for i, v := range []string{"HMS", "meizu", "mz", "xiaomi", "honor", "vivo", "OPPO"} {
		oid, _ := e.create(`{"deviceType":"android","installationId":"ok` + string(rune('a'+i)) + `","vendor":"` + v + `","registrationId":"reg` + v + `"}`)
		if got := e.get(oid)["vendor"]; got != v {
			t.Fatalf("vendor stored as %v, want %q", got, v)
		}
	}

	oid, _ := e.create(`{"deviceType":"android","installationId":"v2","vendor":"mz","registrationId":"r2"}`)
	r = e.do("PUT", "/1.1/installations/"+oid, `{"vendor":"nokia"}`, e.appHeaders()...)
	wantCode1(t, r, "update to nokia", `unknown vendor "nokia"`)
	r = e.do("POST", "/1.1/installations", `{"deviceType":"android","installationId":"v2","vendor":"Nokia","registrationId":"r2"}`, e.appHeaders()...)
	wantCode1(t, r, "upsert to Nokia", `unknown vendor "Nokia"`)
	if got := e.get(oid)["vendor"]; got != "mz" {
		t.Fatalf("vendor %v after refused writes, want mz", got)
	}
}

// TestInstallationVendorStoredBeforeTheRule: an installation stored with an unknown vendor
// before the rule keeps updating while its vendor is unchanged (the SDK re-sends it on every
// save); changing it to another unknown vendor is refused, to a known one accepted.
func TestInstallationVendorStoredBeforeTheRule(t *testing.T) {
	e := newEnv(t)
	const oid = "0123456789abcdef01234567"
	e.putRaw(oid, map[string]any{"deviceType": "android", "installationId": "old1", "vendor": "nokia", "registrationId": "nk1"})
	if r := e.do("PUT", "/1.1/installations/"+oid, `{"channels":["news"]}`, e.appHeaders()...); r.Status != 200 {
		t.Fatalf("update keeping nokia: %d %s", r.Status, r.Body)
	}
	if _, r := e.create(`{"deviceType":"android","installationId":"old1","vendor":"nokia","registrationId":"nk1","badge":1}`); r.Status != 200 {
		t.Fatalf("upsert keeping nokia: %d %s", r.Status, r.Body)
	}
	r := e.do("PUT", "/1.1/installations/"+oid, `{"vendor":"siemens"}`, e.appHeaders()...)
	wantCode1(t, r, "update to siemens", `unknown vendor "siemens"`)
	if r := e.do("PUT", "/1.1/installations/"+oid, `{"vendor":"mz"}`, e.appHeaders()...); r.Status != 200 {
		t.Fatalf("update to mz: %d %s", r.Status, r.Body)
	}
	if doc := e.get(oid); doc["vendor"] != "mz" || doc["badge"] != float64(1) {
		t.Fatalf("doc %v", doc)
	}
}

// TestInstallationVendorEdition: an international app takes fcm and mi and refuses the China
// vendors; an installation stored before its app changed edition keeps updating.
func TestInstallationVendorEdition(t *testing.T) {
	e := newEnv(t)
	china, _ := e.create(`{"deviceType":"android","installationId":"c1","vendor":"hms","registrationId":"h1"}`)
	e.app.Settings.Edition = push.EditionInternational
	if err := e.st.PutApp(context.Background(), e.app); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(time.Minute) // past the app cache
	for _, v := range []string{"hms", "mz", "vivo", "oppo", "honor"} {
		r := e.do("POST", "/1.1/installations", `{"deviceType":"android","installationId":"i-`+v+`","vendor":"`+v+`","registrationId":"x-`+v+`"}`, e.appHeaders()...)
		wantCode1(t, r, v+" in international", "vendor "+v+" is not available in the international edition")
	}
	for _, v := range []string{"fcm", "mi"} {
		e.create(`{"deviceType":"android","installationId":"i-` + v + `","vendor":"` + v + `","registrationId":"x-` + v + `"}`)
	}
	if r := e.do("PUT", "/1.1/installations/"+china, `{"channels":["a"]}`, e.appHeaders()...); r.Status != 200 {
		t.Fatalf("update of a stored hms installation: %d %s", r.Status, r.Body)
	}
}
