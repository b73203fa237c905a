package api

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// TestAuthOriginalHeaders: the original service's header names authenticate exactly like
// X-SVC-*, with the same rules (master suffix, key before signature) and a fixed order
// between families.
func TestAuthOriginalHeaders(t *testing.T) {
	e := newEnv(t)
	id, key, mk := e.app.ID, e.app.AppKey, e.app.MasterKey
	ts := strconv.FormatInt(e.now.UnixMilli(), 10)
	cases := []struct {
		name    string
		headers []string
		status  int
		code    int
		text    string // in the error text, when set
	}{
		{"lc master key", []string{"X-LC-Id", id, "X-LC-Key", mk + ",master"}, 200, 0, ""},
		{"lc app key on master route", []string{"X-LC-Id", id, "X-LC-Key", key}, 403, 119, ""},
		{"lc master sign", []string{"X-LC-Id", id, "X-LC-Sign", Sign(ts, mk) + "," + ts + ",master"}, 200, 0, ""},
		{"lc app sign on master route", []string{"X-LC-Id", id, "X-LC-Sign", Sign(ts, key) + "," + ts}, 403, 119, ""},
		{"lc master key without suffix", []string{"X-LC-Id", id, "X-LC-Key", mk}, 401, 401, ""},
		{"lc bad sign", []string{"X-LC-Id", id, "X-LC-Sign", Sign(ts, "x") + "," + ts + ",master"}, 401, 401, ""},
		{"lc malformed sign names its header", []string{"X-LC-Id", id, "X-LC-Sign", "abc"}, 401, 401, "malformed X-LC-Sign"},
		{"lc stale sign names its header", []string{"X-LC-Id", id, "X-LC-Sign", Sign("1000", mk) + ",1000,master"}, 401, 401, "X-LC-Sign timestamp"},
		{"lc header names are case-insensitive", []string{"x-lc-id", id, "x-lc-key", mk + ",master"}, 200, 0, ""},
		{"lc session token is ignored", []string{"X-LC-Id", id, "X-LC-Key", mk + ",master", "X-LC-Session", "r:0123456789"}, 200, 0, ""},
		{"lc no key", []string{"X-LC-Id", id}, 401, 401, "X-LC-Key"},
		{"lc no id", []string{"X-LC-Key", mk + ",master"}, 401, 401, "X-LC-Id"},
		{"lc unknown app", []string{"X-LC-Id", "nope", "X-LC-Key", mk + ",master"}, 401, 401, ""},
		{"avoscloud master key header", []string{"X-AVOSCloud-Application-Id", id, "X-AVOSCloud-Master-Key", mk}, 200, 0, ""},
		{"avoscloud app key", []string{"X-AVOSCloud-Application-Id", id, "X-AVOSCloud-Application-Key", key}, 403, 119, ""},
		{"avoscloud master sign", []string{"X-AVOSCloud-Application-Id", id, "X-AVOSCloud-Request-Sign", Sign(ts, mk) + "," + ts + ",master"}, 200, 0, ""},
		{"avoscloud app key as master header", []string{"X-AVOSCloud-Application-Id", id, "X-AVOSCloud-Master-Key", key}, 401, 401, ""},
		{"uluru master key", []string{"X-Uluru-Application-Id", id, "X-Uluru-Master-Key", mk}, 200, 0, ""},
		// Key before signature, as with X-SVC-*: a wrong key is not rescued by a good signature.
		{"lc key wins over sign", []string{"X-LC-Id", id, "X-LC-Key", key + "x", "X-LC-Sign", Sign(ts, mk) + "," + ts + ",master"}, 401, 401, ""},
		// Between families pushd's own name wins, then X-LC-*, then X-AVOSCloud-*.
		{"svc id wins over lc id", []string{"X-SVC-Id", "nope", "X-LC-Id", id, "X-LC-Key", mk + ",master"}, 401, 401, ""},
		{"svc key wins over lc key", []string{"X-LC-Id", id, "X-SVC-Key", key, "X-LC-Key", mk + ",master"}, 403, 119, ""},
		{"lc key wins over avoscloud master key", []string{"X-LC-Id", id, "X-LC-Key", key, "X-AVOSCloud-Master-Key", mk}, 403, 119, ""},
		{"lc id wins over avoscloud id", []string{"X-AVOSCloud-Application-Id", "nope", "X-LC-Id", id, "X-LC-Key", mk + ",master"}, 200, 0, ""},
		{"svc sign wins over lc sign", []string{"X-LC-Id", id, "X-SVC-Sign", Sign(ts, key) + "," + ts, "X-LC-Sign", Sign(ts, mk) + "," + ts + ",master"}, 403, 119, ""},
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
			if c.text != "" && !strings.Contains(string(r.Body), c.text) {
				t.Fatalf("body %s does not mention %q", r.Body, c.text)
			}
		})
	}
}

func TestAuthOriginalIdentityShape(t *testing.T) {
	ok := Identity{AppID: "FFnN2hso42Wego3pWq4X5qlu-gzGzoHsz", AppKey: "UtOCzqb67d3sN12Kts4URwy8", MasterKey: "DyJegPlemooo4X1tg94gQkw1"}
	for _, c := range []struct {
		name string
		mod  func(*Identity)
		ok   bool
	}{
		{"north China suffix", func(*Identity) {}, true},
		{"international suffix", func(i *Identity) { i.AppID = "FFnN2hso42Wego3pWq4X5qlu-MdYXbMMI" }, true},
		{"legacy id without suffix", func(i *Identity) { i.AppID = "FFnN2hso42Wego3pWq4X5qlu" }, true},
		{"short id", func(i *Identity) { i.AppID = "FFnN2hso42Wego3pWq4X5ql-gzGzoHsz" }, false},
		{"pushd's own id shape is not the original's", func(i *Identity) { i.AppID = randomKey(24) + "x" }, false},
		{"suffix too short", func(i *Identity) { i.AppID = "FFnN2hso42Wego3pWq4X5qlu-gzGzoHs" }, false},
		{"punctuation", func(i *Identity) { i.AppID = "FFnN2hso42Wego3pWq4X5ql_-gzGzoHsz" }, false},
		{"short app key", func(i *Identity) { i.AppKey = "UtOCzqb67d3sN12Kts4URwy" }, false},
		{"pushd-shaped master key", func(i *Identity) { i.MasterKey = randomKey(32) }, false},
		{"same keys", func(i *Identity) { i.MasterKey = i.AppKey }, false},
	} {
		id := ok
		c.mod(&id)
		perr := id.Validate()
		if (perr == nil) != c.ok {
			t.Errorf("%s: Validate(%+v) = %v, want ok=%v", c.name, id, perr, c.ok)
		}
		if perr != nil && (strings.Contains(perr.Message, id.AppKey) || strings.Contains(perr.Message, id.MasterKey)) {
			t.Errorf("%s: error %q repeats a key", c.name, perr.Message)
		}
	}
}

// TestAuthOriginalIdentityServes: an app created under the original's identity answers to
// the original's signatures (the REST guide's example: ts 1453014943466 and these keys give
// d5bcbb89..., e0747206...), and an id in use is refused without touching its app.
func TestAuthOriginalIdentityServes(t *testing.T) {
	e := newEnv(t)
	ident := Identity{AppID: "FFnN2hso42Wego3pWq4X5qlu-gzGzoHsz", AppKey: "UtOCzqb67d3sN12Kts4URwy8", MasterKey: "DyJegPlemooo4X1tg94gQkw1"}
	if _, perr, err := CreateAppWithIdentity(context.Background(), e.st, AppRequest{Name: ptr("moved")}, ident, e.now); perr != nil || err != nil {
		t.Fatal(perr, err)
	}
	_, perr, err := CreateAppWithIdentity(context.Background(), e.st, AppRequest{Name: ptr("again")}, Identity{AppID: ident.AppID, AppKey: "AAAAAAAAAAAAAAAAAAAAAAAA", MasterKey: "BBBBBBBBBBBBBBBBBBBBBBBB"}, e.now)
	if err != nil || perr == nil || perr.Code != push.CodeDuplicateValue {
		t.Fatalf("second create of %s: %v %v, want 137", ident.AppID, perr, err)
	}
	const ts = "1453014943466"
	e.now = time.UnixMilli(1453014943466).Add(time.Minute) // the guide's clock
	skewed := e
	r := skewed.do("GET", "/1.1/installations", "", "X-LC-Id", ident.AppID, "X-LC-Sign", "e074720658078c898aa0d4b1b82bdf4b,"+ts+",master")
	if r.Status != 200 {
		t.Fatalf("master signature of the guide: %d %s", r.Status, r.Body)
	}
	r = skewed.do("GET", "/1.1/installations/none", "", "X-LC-Id", ident.AppID, "X-LC-Sign", "d5bcbb897e19b2f6633c716dfdfaf9be,"+ts)
	if r.Status != 404 || r.Code(t) != 101 {
		t.Fatalf("app-key signature of the guide: %d %s", r.Status, r.Body)
	}
}
