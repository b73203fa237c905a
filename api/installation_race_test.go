package api

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// hookStore runs a test's hook inside the store calls of the request under test, to place
// another writer at an exact point of it.
type hookStore struct {
	InstallationStore
	mu       sync.Mutex
	onLookup func(kind push.IDKind, id, oid string) // after a LookupDevice that found oid
	onGet    func(oid string)                       // after a GetInstallation that found oid
}

func (h *hookStore) LookupDevice(ctx context.Context, appID string, kind push.IDKind, id string) (string, error) {
	oid, err := h.InstallationStore.LookupDevice(ctx, appID, kind, id)
	if err == nil {
		h.mu.Lock()
		f := h.onLookup
		h.mu.Unlock()
		if f != nil {
			f(kind, id, oid)
		}
	}
	return oid, err
}

func (h *hookStore) GetInstallation(ctx context.Context, appID, oid string) (push.Installation, error) {
	inst, err := h.InstallationStore.GetInstallation(ctx, appID, oid)
	if err == nil {
		h.mu.Lock()
		f := h.onGet
		h.mu.Unlock()
		if f != nil {
			f(oid)
		}
	}
	return inst, err
}

// once makes f run at its first call only, and clears itself.
func (h *hookStore) once(slot *func(push.IDKind, string, string), f func(push.IDKind, string, string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	*slot = func(k push.IDKind, id, oid string) {
		h.mu.Lock()
		*slot = nil
		h.mu.Unlock()
		f(k, id, oid)
	}
}

func newHookEnv(t *testing.T) (*testEnv, *hookStore) {
	var hs *hookStore
	e := newEnv(t, func(_ *Config, d *Deps) {
		hs = &hookStore{InstallationStore: d.Installations}
		d.Installations = hs
	})
	return e, hs
}

// disjointStripes says whether the API lock stripes of keys a and keys b differ, so a write
// holding a can let one needing b run to its end (the tests below would deadlock otherwise).
func (e *testEnv) disjointStripes(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if e.srv.locks.index(x) == e.srv.locks.index(y) {
				return false
			}
		}
	}
	return true
}

// An upsert looks its device ids up, then locks the installations they point at. A PUT that
// moves one of those ids away (a new registrationId) while the upsert waits must not make the
// upsert treat that installation as a stale registration of its device and delete it.
func TestInstallationsUpsertAfterAnIdMovedAway(t *testing.T) {
	e, hs := newHookEnv(t)
	var x, iid, reg string
	for i := 0; ; i++ { // names whose lock stripes do not collide
		iid, reg = fmt.Sprintf("bnew%d", i), fmt.Sprintf("r1-%d", i)
		x, _ = e.create(fmt.Sprintf(`{"deviceType":"android","installationId":"ax%d","registrationId":%q}`, i, reg))
		held := []string{deviceKey(e.app.ID, string(push.KindIID), iid), deviceKey(e.app.ID, string(push.KindRegID), reg)}
		needed := []string{objectKey(e.app.ID, x), deviceKey(e.app.ID, string(push.KindRegID), "r2")}
		if e.disjointStripes(held, needed) {
			break
		}
	}
	hs.once(&hs.onLookup, func(kind push.IDKind, id, oid string) {
		if oid != x {
			t.Errorf("lookup of %s %s found %s, want %s", kind, id, oid, x)
		}
		// The upsert holds its device locks and has just seen reg point at x.
		if r := e.do("PUT", "/1.1/installations/"+x, `{"registrationId":"r2"}`, e.appHeaders()...); r.Status != 200 {
			t.Errorf("PUT moving %s away: %d %s", reg, r.Status, r.Body)
		}
	})
	r := e.do("POST", "/1.1/installations", fmt.Sprintf(`{"deviceType":"android","installationId":%q,"registrationId":%q}`, iid, reg), e.appHeaders()...)
	if r.Status != 201 {
		t.Fatalf("upsert with the moved id: %d %s, want 201 (no installation has %s now)", r.Status, r.Body, reg)
	}
	if got := e.get(x); got["registrationId"] != "r2" {
		t.Fatalf("installation %s after the upsert: %v, want it kept with registrationId r2", x, got)
	}
	if got := e.get(r.JSON(t)["objectId"].(string)); got["registrationId"] != reg {
		t.Fatalf("new installation: %v, want registrationId %s", got, reg)
	}
}

// The sweep may delete an installation between an upsert's read and its write, and another
// device may then take a registrationId the swept record carried. The upsert, whose body
// carries only its own token, must not fail with 137 for an id it never sent: it starts over
// and creates its installation anew.
func TestInstallationsUpsertRacingTheSweep(t *testing.T) {
	e, hs := newHookEnv(t)
	var x, token, reg string
	for i := 0; ; i++ {
		token, reg = fmt.Sprintf("%064x", 1000+i), fmt.Sprintf("r1-%d", i)
		x, _ = e.create(fmt.Sprintf(`{"deviceType":"ios","deviceToken":%q,"registrationId":%q}`, token, reg))
		held := []string{deviceKey(e.app.ID, string(push.KindToken), token), objectKey(e.app.ID, x)}
		needed := []string{deviceKey(e.app.ID, string(push.KindIID), "other"), deviceKey(e.app.ID, string(push.KindRegID), reg)}
		if e.disjointStripes(held, needed) {
			break
		}
		if _, err := e.st.DeleteInactive(context.Background(), e.app.ID, 16, e.now.Add(2*time.Hour), 100); err != nil {
			t.Fatal(err)
		}
	}
	var hooked bool
	hs.mu.Lock()
	hs.onGet = func(oid string) {
		hs.mu.Lock()
		hs.onGet = nil
		hs.mu.Unlock()
		hooked = oid == x
		n, err := e.st.DeleteInactive(context.Background(), e.app.ID, 16, e.now.Add(2*time.Hour), 100)
		if err != nil || n != 1 {
			t.Errorf("sweep: %d, %v; want 1 deleted", n, err)
		}
		r := e.do("POST", "/1.1/installations", fmt.Sprintf(`{"deviceType":"android","installationId":"other","registrationId":%q}`, reg), e.appHeaders()...)
		if r.Status != 201 {
			t.Errorf("another device taking %s: %d %s", reg, r.Status, r.Body)
		}
	}
	hs.mu.Unlock()
	r := e.do("POST", "/1.1/installations", fmt.Sprintf(`{"deviceType":"ios","deviceToken":%q}`, strings.ToUpper(token)), e.appHeaders()...)
	if !hooked {
		t.Fatal("the upsert did not read the swept installation first")
	}
	if r.Status != 201 {
		t.Fatalf("upsert of the swept device: %d %s, want 201", r.Status, r.Body)
	}
	got := e.get(r.JSON(t)["objectId"].(string))
	if got["deviceToken"] != token || got["registrationId"] != nil {
		t.Fatalf("recreated installation %v, want token %s and no registrationId", got, token)
	}
	other, _ := e.create(`{"deviceType":"android","installationId":"other"}`)
	if got := e.get(other); got["registrationId"] != reg {
		t.Fatalf("the device that took %s: %v", reg, got)
	}
}

// An ordered query keeps only order values and ids while it scans, and reads its page's
// documents at the end: what changed in between is read as it is then, and an installation
// deleted, or no longer matching, is left out.
func TestInstallationsOrderedPageReadAtTheEnd(t *testing.T) {
	e, hs := newHookEnv(t)
	oids := make([]string, 6)
	for i := range oids {
		oids[i], _ = e.create(fmt.Sprintf(`{"deviceType":"android","installationId":"o%d","rank":%d,"keep":true}`, i, i))
	}
	hs.mu.Lock()
	hs.onGet = func(string) { // after the page's first read (rank 4): the scan is over
		hs.mu.Lock()
		hs.onGet = nil
		hs.mu.Unlock()
		if r := e.do("DELETE", "/1.1/installations/"+oids[2], "", e.masterHeaders()...); r.Status != 200 {
			t.Errorf("delete: %d %s", r.Status, r.Body)
		}
		if r := e.do("PUT", "/1.1/installations/"+oids[3], `{"keep":false}`, e.appHeaders()...); r.Status != 200 {
			t.Errorf("put: %d %s", r.Status, r.Body)
		}
		if r := e.do("PUT", "/1.1/installations/"+oids[1], `{"note":"changed"}`, e.appHeaders()...); r.Status != 200 {
			t.Errorf("put: %d %s", r.Status, r.Body)
		}
	}
	hs.mu.Unlock()
	r := e.do("GET", "/1.1/installations?where="+url.QueryEscape(`{"keep":true}`)+"&order=-rank&skip=1&limit=4&keys=rank,note", "", e.masterHeaders()...)
	if r.Status != 200 {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	}
	var got []string
	for _, res := range r.JSON(t)["results"].([]any) {
		m := res.(map[string]any)
		got = append(got, fmt.Sprintf("%v %v", m["rank"], m["note"]))
	}
	// Ranks 4, 3, 2, 1 make the page; 3 no longer matches and 2 is gone.
	if want := []string{"4 <nil>", "1 changed"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("page %v, want %v", got, want)
	}
}
