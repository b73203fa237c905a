package api

import "testing"

// TestInstallationRegistrationIDSeparators: a registrationId holding a separator of a vendor's
// joined target list (',' for Xiaomi and Meizu, ';' for OPPO's lists), a space or a control
// character is refused with code 1 on create and update, and nothing changes.
func TestInstallationRegistrationIDSeparators(t *testing.T) {
	e := newEnv(t)
	for _, rid := range []string{`regA,regB`, `regA;regB`, `reg A`, `reg\tA`, `reg\u0000A`, ``} {
		r := e.do("POST", "/1.1/installations", `{"deviceType":"android","installationId":"c1","vendor":"mi","registrationId":"`+rid+`"}`, e.appHeaders()...)
		wantCode1(t, r, "create "+rid, "invalid registrationId")
	}
	if n := e.count(e.app.ID, e.app.Settings.Buckets); n != 0 {
		t.Fatalf("%d installations stored after refused creates", n)
	}
	oid, _ := e.create(`{"deviceType":"android","installationId":"c2","vendor":"mi","registrationId":"d//jbxqRw3pZ+AbC=:x-y_z.1"}`)
	r := e.do("PUT", "/1.1/installations/"+oid, `{"registrationId":"regA,regB"}`, e.appHeaders()...)
	wantCode1(t, r, "update to regA,regB", "invalid registrationId")
	if got := e.get(oid)["registrationId"]; got != "d//jbxqRw3pZ+AbC=:x-y_z.1" {
		t.Fatalf("registrationId %v after a refused update", got)
	}
}
