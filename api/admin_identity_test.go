package api

import (
	"strings"
	"testing"
)

// TestAdminCreateWithOriginalIdentity: POST /admin/apps takes the original's identity in its
// body (never in the URL), refuses ids and keys of another shape and an id in use, and the
// app answers to the original's header names and keys at once.
func TestAdminCreateWithOriginalIdentity(t *testing.T) {
	e := newEnv(t)
	h := e.adminHeaders()
	const (
		id = "FFnN2hso42Wego3pWq4X5qlu-9Nh9j0Va"
		ak = "UtOCzqb67d3sN12Kts4URwy8"
		mk = "DyJegPlemooo4X1tg94gQkw1"
	)
	body := `{"name":"moved","identity":{"appId":"` + id + `","appKey":"` + ak + `","masterKey":"` + mk + `"}}`
	for _, c := range []struct {
		name, body string
		status     int
		code       int
	}{
		{"legacy id without a region suffix", strings.Replace(body, id, "0123456789abcdefghijABCD", 1), 201, 0},
		{"short key", strings.Replace(body, ak, ak[:23], 1), 400, 1},
		{"master key of pushd's length", strings.Replace(body, mk, mk+"01234567", 1), 400, 1},
		{"unknown identity field", strings.Replace(body, `"appKey"`, `"key":"x","appKey"`, 1), 400, 1},
		{"original identity", body, 201, 0},
		{"id in use", strings.Replace(strings.Replace(body, ak, "AAAAAAAAAAAAAAAAAAAAAAAA", 1), mk, "BBBBBBBBBBBBBBBBBBBBBBBB", 1), 400, 137},
	} {
		r := e.do("POST", "/admin/apps", c.body, h...)
		if r.Status != c.status || (c.code != 0 && r.Code(t) != c.code) {
			t.Errorf("%s: %d %s, want %d code %d", c.name, r.Status, r.Body, c.status, c.code)
		}
		if c.code != 0 && (strings.Contains(string(r.Body), ak) || strings.Contains(string(r.Body), mk)) {
			t.Errorf("%s: error %s repeats a key", c.name, r.Body)
		}
	}
	if r := e.do("GET", "/1.1/installations", "", "X-LC-Id", id, "X-LC-Key", mk+",master"); r.Status != 200 {
		t.Fatalf("original master key on the moved app: %d %s", r.Status, r.Body)
	}
	if r := e.do("GET", "/1.1/installations", "", "X-LC-Id", id, "X-LC-Key", "BBBBBBBBBBBBBBBBBBBBBBBB,master"); r.Status != 401 {
		t.Fatalf("the refused re-create changed the keys: %d %s", r.Status, r.Body)
	}
	// The identity is fixed at creation: an update may not carry one.
	if r := e.do("PUT", "/admin/apps/"+id, `{"identity":{"appId":"`+id+`"}}`, h...); r.Status != 400 || r.Code(t) != 1 {
		t.Fatalf("PUT with an identity: %d %s, want 400 code 1", r.Status, r.Body)
	}
}
