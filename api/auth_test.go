package api

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// checkSign is the whole X-SVC-Sign check of authenticate for one app: form and clock, then
// the digest.
func checkSign(h string, app *push.App, now time.Time, skew time.Duration) (master bool, _ *push.Error) {
	sg, perr := parseSign(h, now, skew)
	if perr != nil {
		return false, perr
	}
	if !sg.valid(app) {
		return false, errUnauthorized
	}
	return sg.master, nil
}

func TestAuthSignDocVector(t *testing.T) {
	if got := Sign("1453014943466", "UtOCzqb67d3sN12Kts4URwy8"); got != "d5bcbb897e19b2f6633c716dfdfaf9be" {
		t.Fatalf("app key sign = %s", got)
	}
	if got := Sign("1453014943466", "DyJegPlemooo4X1tg94gQkw1"); got != "e074720658078c898aa0d4b1b82bdf4b" {
		t.Fatalf("master key sign = %s", got)
	}
	app := &push.App{AppKey: "UtOCzqb67d3sN12Kts4URwy8", MasterKey: "DyJegPlemooo4X1tg94gQkw1"}
	now := time.UnixMilli(1453014943466).Add(time.Minute)
	cases := []struct {
		header     string
		now        time.Time
		ok, master bool
	}{
		{"d5bcbb897e19b2f6633c716dfdfaf9be,1453014943466", now, true, false},
		{"e074720658078c898aa0d4b1b82bdf4b,1453014943466,master", now, true, true},
		{"e074720658078c898aa0d4b1b82bdf4b,1453014943466", now, false, false},                // master sign without the suffix
		{"D5BCBB897E19B2F6633C716DFDFAF9BE,1453014943466", now, false, false},                // uppercase hex fails
		{"d5bcbb897e19b2f6633c716dfdfaf9be,1453014943466", now.Add(time.Hour), false, false}, // outside the skew
		{"d5bcbb897e19b2f6633c716dfdfaf9be,1453014943466,admin", now, false, false},
		{"d5bcbb897e19b2f6633c716dfdfaf9be", now, false, false},
		{"d5bcbb897e19b2f6633c716dfdfaf9be,abc", now, false, false},
	}
	for _, c := range cases {
		master, perr := checkSign(c.header, app, c.now, 15*time.Minute)
		if (perr == nil) != c.ok || master != c.master {
			t.Errorf("checkSign(%q) = %v, %v; want ok=%v master=%v", c.header, master, perr, c.ok, c.master)
		}
		if perr != nil && perr.Code != push.CodeUnauthorized {
			t.Errorf("checkSign(%q) code %d", c.header, perr.Code)
		}
	}
}

func TestAuthHeaders(t *testing.T) {
	e := newEnv(t)
	id, key, mk := e.app.ID, e.app.AppKey, e.app.MasterKey
	ts := strconv.FormatInt(e.now.UnixMilli(), 10)
	cases := []struct {
		name    string
		headers []string
		status  int
		code    int
	}{
		{"no id", []string{HeaderKey, key}, 401, 401},
		{"no key", []string{HeaderAppID, id}, 401, 401},
		{"unknown app", []string{HeaderAppID, "nope", HeaderKey, key}, 401, 401},
		{"wrong key", []string{HeaderAppID, id, HeaderKey, key + "x"}, 401, 401},
		{"master key as app key", []string{HeaderAppID, id, HeaderKey, mk}, 401, 401},
		{"app key as master", []string{HeaderAppID, id, HeaderKey, key + ",master"}, 401, 401},
		{"app key on master route", []string{HeaderAppID, id, HeaderKey, key}, 403, 119},
		{"master key", []string{HeaderAppID, id, HeaderKey, mk + ",master"}, 200, 0},
		{"master sign", []string{HeaderAppID, id, HeaderSign, Sign(ts, mk) + "," + ts + ",master"}, 200, 0},
		{"app sign on master route", []string{HeaderAppID, id, HeaderSign, Sign(ts, key) + "," + ts}, 403, 119},
		{"bad sign", []string{HeaderAppID, id, HeaderSign, Sign(ts, "x") + "," + ts + ",master"}, 401, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("GET", "/1.1/installations", "", c.headers...)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if c.code != 0 && r.Code(t) != c.code {
				t.Fatalf("code %d, want %d", r.Code(t), c.code)
			}
		})
	}
	// An app key works on app routes, by key and by signature.
	r := e.do("GET", "/1.1/installations/none", "", HeaderAppID, id, HeaderSign, Sign(ts, key)+","+ts)
	if r.Status != 404 || r.Code(t) != 101 {
		t.Fatalf("signed app-key GET: %d %s", r.Status, r.Body)
	}
}

// countingApps counts GetApp calls to observe the cache.
type countingApps struct {
	AppStore
	gets int
}

func (c *countingApps) GetApp(ctx context.Context, id string) (push.App, error) {
	c.gets++
	return c.AppStore.GetApp(ctx, id)
}

func TestAuthAppCacheTTL(t *testing.T) {
	e := newEnv(t)
	now := e.now
	ca := &countingApps{AppStore: e.st}
	c := newAppCache(ca, 5*time.Second, func() time.Time { return now })
	for range 3 {
		if _, err := c.get(context.Background(), e.app.ID); err != nil {
			t.Fatal(err)
		}
	}
	if ca.gets != 1 {
		t.Fatalf("gets = %d, want 1 (cached)", ca.gets)
	}
	now = now.Add(6 * time.Second)
	c.get(context.Background(), e.app.ID)
	c.invalidate(e.app.ID)
	c.get(context.Background(), e.app.ID)
	if ca.gets != 3 {
		t.Fatalf("gets = %d, want 3 (expired, then invalidated)", ca.gets)
	}
	if _, err := c.get(context.Background(), "missing"); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("missing app: %v", err)
	}
	if strings.Contains(strings.Join([]string{}, ""), "x") {
		t.Fatal()
	}
}

// A signature's form and clock are judged before the app is read: the answers for a real app
// id and an unknown one are the same, so they tell nothing about which ids exist.
func TestAuthSignAnswersDoNotRevealApps(t *testing.T) {
	e := newEnv(t)
	ts := strconv.FormatInt(e.now.UnixMilli(), 10)
	old := strconv.FormatInt(e.now.Add(-time.Hour).UnixMilli(), 10)
	for _, sign := range []string{"abc", "abc,1", "abc," + old, "abc,xyz", Sign(ts, "not-the-key") + "," + ts} {
		real := e.do("GET", "/1.1/installations/none", "", HeaderAppID, e.app.ID, HeaderSign, sign)
		unknown := e.do("GET", "/1.1/installations/none", "", HeaderAppID, "nosuchapp", HeaderSign, sign)
		if real.Status != 401 || unknown.Status != 401 || string(real.Body) != string(unknown.Body) {
			t.Errorf("sign %q: real app %d %s, unknown app %d %s; want the same 401", sign, real.Status, real.Body, unknown.Status, unknown.Body)
		}
	}
}

// An invalidation that lands between the cache's store read and its fill wins: the app read
// before the update is not cached.
func TestAuthAppCacheInvalidationDuringRead(t *testing.T) {
	e := newEnv(t)
	c := newAppCache(e.st, time.Hour, func() time.Time { return e.now })
	c.afterRead = func() {
		c.afterRead = nil
		c.invalidate(e.app.ID) // an admin update of the app, committed after our read
	}
	if _, err := c.get(context.Background(), e.app.ID); err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	_, cached := c.entries[e.app.ID]
	c.mu.RUnlock()
	if cached {
		t.Fatal("the app read before an invalidation was cached")
	}
	if _, err := c.get(context.Background(), e.app.ID); err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	_, cached = c.entries[e.app.ID]
	c.mu.RUnlock()
	if !cached {
		t.Fatal("a read with no invalidation in between was not cached")
	}
}

func TestAuthAdminBearer(t *testing.T) {
	e := newEnv(t)
	const tok = "admin-token-0123456789"
	for _, c := range []struct {
		auth   string
		status int
	}{
		{"Bearer " + tok, 200},
		{"bearer " + tok, 200},
		{"BEARER  " + tok, 200},
		{"Bearer\t" + tok, 401}, // the scheme ends at a space
		{"Bearer " + tok + "x", 401},
		{"Basic " + tok, 401},
		{tok, 401},
		{"", 401},
	} {
		r := e.do("GET", "/admin/apps", "", "Authorization", c.auth)
		if r.Status != c.status {
			t.Errorf("Authorization %q: %d %s, want %d", c.auth, r.Status, r.Body, c.status)
		}
		if c.status == 401 && string(r.Header.Peek("WWW-Authenticate")) == "" {
			t.Errorf("Authorization %q: 401 without WWW-Authenticate", c.auth)
		}
	}
}

// Credentials are checked before the body's type and size: a caller without them learns 401
// whatever it sent.
func TestAuthBeforeBodyChecks(t *testing.T) {
	e := newEnv(t)
	big := `{"pad":"` + strings.Repeat("a", AdminBodyLimit) + `"}`
	for _, c := range []struct {
		path, body, ctype string
		headers           []string
	}{
		{"/1.1/installations", `{}`, "text/plain", []string{HeaderAppID, e.app.ID, HeaderKey, "wrong"}},
		{"/1.1/installations", `{}`, "", nil},
		{"/admin/apps", `{}`, "text/plain", []string{"Authorization", "Bearer wrong-token-0123456789"}},
		{"/admin/apps", big, "application/json", nil},
	} {
		h := append(append([]string{}, c.headers...), "Content-Type", c.ctype)
		if r := e.do("POST", c.path, c.body, h...); r.Status != 401 || r.Code(t) != 401 {
			t.Errorf("POST %s (%d bytes, %q) without valid credentials: %d %s, want 401", c.path, len(c.body), c.ctype, r.Status, r.Body)
		}
	}
}
