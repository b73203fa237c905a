package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

var isoRe = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

const tokA = "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789"

// count returns how many installations the app has, through the store.
func (e *testEnv) count(appID string, buckets int) int {
	e.t.Helper()
	n := 0
	for b := 0; b < buckets; b++ {
		err := e.st.Scan(context.Background(), store.ScanRange{AppID: appID, Bucket: b}, func(*store.Row) error { n++; return nil })
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return n
}

func (e *testEnv) create(body string) (string, resp) {
	e.t.Helper()
	r := e.do("POST", "/1.1/installations", body, e.appHeaders()...)
	if r.Status != 201 && r.Status != 200 {
		e.t.Fatalf("create %s: %d %s", body, r.Status, r.Body)
	}
	return r.JSON(e.t)["objectId"].(string), r
}

func (e *testEnv) get(oid string) map[string]any {
	e.t.Helper()
	r := e.do("GET", "/1.1/installations/"+oid, "", e.appHeaders()...)
	if r.Status != 200 {
		e.t.Fatalf("get %s: %d %s", oid, r.Status, r.Body)
	}
	return r.JSON(e.t)
}

func TestInstallationsCreateGetUpsert(t *testing.T) {
	e := newEnv(t)
	oid, r := e.create(`{"deviceType":"android","installationId":"IID-1","channels":["news","体育"],"age":3}`)
	if r.Status != 201 {
		t.Fatalf("status %d", r.Status)
	}
	if loc := string(r.Header.Peek("Location")); loc != "http://pushd.test/1.1/installations/"+oid {
		t.Fatalf("Location %q", loc)
	}
	m := r.JSON(t)
	if len(oid) != 24 || !isoRe.MatchString(m["createdAt"].(string)) || len(m) != 2 {
		t.Fatalf("create body %s", r.Body)
	}
	if m["createdAt"] != "2026-03-04T05:06:07.891Z" {
		t.Fatalf("createdAt %v", m["createdAt"])
	}
	doc := e.get(oid)
	if doc["installationId"] != "iid-1" || doc["age"] != float64(3) || doc["objectId"] != oid ||
		doc["createdAt"] != m["createdAt"] || doc["updatedAt"] != m["createdAt"] {
		t.Fatalf("doc %v", doc)
	}

	// The app is opened again: same installationId ⇒ update, 200, refreshed updatedAt.
	e.now = e.now.Add(time.Hour)
	oid2, r := e.create(`{"deviceType":"android","installationId":"iid-1","timeZone":"Asia/Shanghai"}`)
	if r.Status != 200 || oid2 != oid {
		t.Fatalf("upsert %d %s", r.Status, r.Body)
	}
	m = r.JSON(t)
	if m["updatedAt"] != "2026-03-04T06:06:07.891Z" || len(m) != 2 {
		t.Fatalf("upsert body %s", r.Body)
	}
	doc = e.get(oid)
	if doc["timeZone"] != "Asia/Shanghai" || doc["age"] != float64(3) || doc["updatedAt"] != m["updatedAt"] || doc["createdAt"] != "2026-03-04T05:06:07.891Z" {
		t.Fatalf("doc after upsert %v", doc)
	}
	if n := e.count(e.app.ID, 16); n != 1 {
		t.Fatalf("%d installations, want 1", n)
	}

	// iOS: tokens are stored lower-case and match in any case.
	ios, _ := e.create(`{"deviceType":"ios","deviceToken":"` + tokA + `","apnsTopic":"com.x"}`)
	if got := e.get(ios)["deviceToken"]; got != strings.ToLower(tokA) {
		t.Fatalf("token %v", got)
	}
	again, r := e.create(`{"deviceType":"ios","deviceToken":"` + strings.ToLower(tokA) + `","badge":2}`)
	if again != ios || r.Status != 200 {
		t.Fatalf("ios upsert %d %s", r.Status, r.Body)
	}
}

func TestInstallationsStaleDeviceIDsReplaced(t *testing.T) {
	e := newEnv(t)
	a, _ := e.create(`{"deviceType":"android","installationId":"old","registrationId":"reg-1","vendor":"mi"}`)
	b, r := e.create(`{"deviceType":"android","installationId":"new","registrationId":"reg-1","vendor":"mi"}`)
	if r.Status != 201 || a == b {
		t.Fatalf("reinstall: %d %s", r.Status, r.Body)
	}
	if r := e.do("GET", "/1.1/installations/"+a, "", e.appHeaders()...); r.Status != 404 || r.Code(t) != 101 {
		t.Fatalf("stale record still there: %d %s", r.Status, r.Body)
	}
	if n := e.count(e.app.ID, 16); n != 1 {
		t.Fatalf("%d installations", n)
	}
}

func TestInstallationsBadInput(t *testing.T) {
	e := newEnv(t)
	good, _ := e.create(`{"deviceType":"android","installationId":"keep"}`)
	before := e.get(good)
	cases := []struct {
		name string
		body string
		code int
	}{
		{"missing deviceType", `{"installationId":"a"}`, 113},
		{"unknown deviceType", `{"deviceType":"wp","installationId":"a"}`, 1},
		{"deviceType type", `{"deviceType":5,"installationId":"a"}`, 111},
		{"ios without token", `{"deviceType":"ios"}`, 113},
		{"ios bad token", `{"deviceType":"ios","deviceToken":"xyz"}`, 114},
		{"ios short token", `{"deviceType":"ios","deviceToken":"abcd"}`, 114},
		{"android without iid", `{"deviceType":"android"}`, 113},
		{"android empty iid", `{"deviceType":"android","installationId":""}`, 113},
		{"iid with space", `{"deviceType":"android","installationId":"a b"}`, 1},
		{"iid type", `{"deviceType":"android","installationId":7}`, 111},
		{"channels type", `{"deviceType":"android","installationId":"a","channels":"news"}`, 111},
		{"channel element type", `{"deviceType":"android","installationId":"a","channels":[1]}`, 111},
		{"channel charset", `{"deviceType":"android","installationId":"a","channels":["a b"]}`, 112},
		{"channel empty", `{"deviceType":"android","installationId":"a","channels":[""]}`, 112},
		{"channel dot", `{"deviceType":"android","installationId":"a","channels":["a.b"]}`, 112},
		// Han characters outside the CJK unified blocks: /1.1/push refuses them as channels, so
		// an installation may not subscribe to them either.
		{"channel compatibility ideograph", `{"deviceType":"android","installationId":"a","channels":["\uF900"]}`, 112},
		{"channel CJK radical", `{"deviceType":"android","installationId":"a","channels":["\u2E80"]}`, 112},
		{"channel iteration mark", `{"deviceType":"android","installationId":"a","channels":["\u3005"]}`, 112},
		{"channel compatibility supplement", `{"deviceType":"android","installationId":"a","channels":["\uD87E\uDC00"]}`, 112},
		{"channel too long", `{"deviceType":"android","installationId":"a","channels":["` + strings.Repeat("a", 257) + `"]}`, 112},
		{"deviceProfile", `{"deviceType":"android","installationId":"a","deviceProfile":"1x"}`, 1},
		{"objectId", `{"deviceType":"android","installationId":"a","objectId":"x"}`, 117},
		{"createdAt", `{"deviceType":"android","installationId":"a","createdAt":"x"}`, 117},
		{"updatedAt", `{"deviceType":"android","installationId":"a","updatedAt":"x"}`, 117},
		{"dot in name", `{"deviceType":"android","installationId":"a","a.b":1}`, 121},
		{"dollar in name", `{"deviceType":"android","installationId":"a","$a":1}`, 121},
		{"nested dollar", `{"deviceType":"android","installationId":"a","x":{"$gt":1}}`, 121},
		{"digit first", `{"deviceType":"android","installationId":"a","1a":1}`, 105},
		{"underscore first", `{"deviceType":"android","installationId":"a","_a":1}`, 105},
		{"valid type", `{"deviceType":"android","installationId":"a","valid":"yes"}`, 111},
		{"badge type", `{"deviceType":"android","installationId":"a","badge":"1"}`, 111},
		{"unknown op", `{"deviceType":"android","installationId":"a","n":{"__op":"Multiply"}}`, 111},
		{"vendor type", `{"deviceType":"android","installationId":"a","vendor":1}`, 111},
		// A null built-in field is absent, so a null required one is missing.
		{"deviceType null", `{"deviceType":null,"installationId":"a"}`, 113},
		{"android iid null", `{"deviceType":"android","installationId":null}`, 113},
		{"ios token null", `{"deviceType":"ios","deviceToken":null}`, 113},
		{"deviceType changed on upsert", `{"deviceType":"ios","installationId":"keep","deviceToken":"` + tokA + `"}`, 117},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/1.1/installations", c.body, e.appHeaders()...)
			if r.Status != 400 || r.Code(t) != c.code {
				t.Fatalf("got %d %s, want 400 code %d", r.Status, r.Body, c.code)
			}
		})
	}
	if n := e.count(e.app.ID, 16); n != 1 {
		t.Fatalf("bad input changed the store: %d installations", n)
	}
	if after := e.get(good); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("record changed: %v -> %v", before, after)
	}
}

func TestInstallationsUpdateOps(t *testing.T) {
	e := newEnv(t)
	oid, _ := e.create(`{"deviceType":"android","installationId":"a","channels":["a"],"n":1,"gone":true}`)
	e.now = e.now.Add(time.Minute)
	put := func(body string) resp {
		return e.do("PUT", "/1.1/installations/"+oid, body, e.appHeaders()...)
	}
	r := put(`{"channels":{"__op":"AddUnique","objects":["a","b"]},"n":{"__op":"Increment","amount":2},"gone":{"__op":"Delete"},"color":"red","tags":{"__op":"Add","objects":["x","x"]}}`)
	if r.Status != 200 {
		t.Fatalf("put %d %s", r.Status, r.Body)
	}
	m := r.JSON(t)
	if m["objectId"] != oid || m["updatedAt"] != "2026-03-04T05:07:07.891Z" || len(m) != 2 {
		t.Fatalf("put body %s", r.Body)
	}
	doc := e.get(oid)
	if fmt.Sprint(doc["channels"]) != "[a b]" || doc["n"] != float64(3) || doc["color"] != "red" || fmt.Sprint(doc["tags"]) != "[x x]" {
		t.Fatalf("doc %v", doc)
	}
	if _, ok := doc["gone"]; ok {
		t.Fatalf("Delete kept the field: %v", doc)
	}
	if r := put(`{"channels":{"__op":"Remove","objects":["a"]},"fresh":{"__op":"Increment","amount":5}}`); r.Status != 200 {
		t.Fatalf("put %d %s", r.Status, r.Body)
	}
	doc = e.get(oid)
	if fmt.Sprint(doc["channels"]) != "[b]" || doc["fresh"] != float64(5) {
		t.Fatalf("doc %v", doc)
	}
	// A client key may update; deviceProfile and registrationId may change.
	if r := put(`{"registrationId":"r1","vendor":"mi","deviceProfile":"p_1"}`); r.Status != 200 {
		t.Fatalf("put %d %s", r.Status, r.Body)
	}
	other, _ := e.create(`{"deviceType":"android","installationId":"b","registrationId":"r2"}`)
	bad := []struct {
		name, body string
		status     int
		code       int
	}{
		{"change deviceType", `{"deviceType":"ios"}`, 400, 117},
		{"change installationId", `{"installationId":"zz"}`, 400, 117},
		{"delete installationId", `{"installationId":{"__op":"Delete"}}`, 400, 113},
		{"registrationId of another", `{"registrationId":"r2"}`, 400, 137},
		{"increment a string", `{"color":{"__op":"Increment","amount":1}}`, 400, 111},
		{"add to a number", `{"n":{"__op":"Add","objects":[1]}}`, 400, 111},
		{"increment without amount", `{"n":{"__op":"Increment"}}`, 400, 111},
		{"add without objects", `{"channels":{"__op":"Add"}}`, 400, 111},
		{"bad channel through op", `{"channels":{"__op":"Add","objects":["no way"]}}`, 400, 112},
		{"objectId", `{"objectId":"x"}`, 400, 117},
		{"not an object", `[]`, 400, 107},
	}
	before := e.get(oid)
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := put(c.body)
			if r.Status != c.status || r.Code(t) != c.code {
				t.Fatalf("got %d %s, want %d code %d", r.Status, r.Body, c.status, c.code)
			}
		})
	}
	if after := e.get(oid); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("bad updates changed the record")
	}
	if r := e.do("PUT", "/1.1/installations/nope", `{"a":1}`, e.appHeaders()...); r.Status != 404 || r.Code(t) != 101 {
		t.Fatalf("put unknown: %d %s", r.Status, r.Body)
	}
	_ = other
}

func TestInstallationsDeleteAndCrossApp(t *testing.T) {
	e := newEnv(t)
	oid, _ := e.create(`{"deviceType":"android","installationId":"a"}`)
	one := 1
	app2, _, err := CreateApp(context.Background(), e.st, AppRequest{Name: ptr("two"), Settings: &SettingsRequest{Buckets: &one}}, e.now)
	if err != nil {
		t.Fatal(err)
	}
	h2 := []string{HeaderAppID, app2.ID, HeaderKey, app2.MasterKey + ",master"}
	for _, m := range []string{"GET", "DELETE"} {
		if r := e.do(m, "/1.1/installations/"+oid, "", h2...); r.Status != 404 || r.Code(t) != 101 {
			t.Fatalf("%s from another app: %d %s", m, r.Status, r.Body)
		}
	}
	if r := e.do("PUT", "/1.1/installations/"+oid, `{"a":1}`, h2...); r.Status != 404 {
		t.Fatalf("PUT from another app: %d", r.Status)
	}
	if r := e.do("DELETE", "/1.1/installations/"+oid, "", e.appHeaders()...); r.Status != 403 || r.Code(t) != 119 {
		t.Fatalf("delete with app key: %d %s", r.Status, r.Body)
	}
	r := e.do("DELETE", "/1.1/installations/"+oid, "", e.masterHeaders()...)
	if r.Status != 200 || string(r.Body) != "{}" {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := e.do("DELETE", "/1.1/installations/"+oid, "", e.masterHeaders()...); r.Status != 404 || r.Code(t) != 101 {
		t.Fatalf("delete again: %d %s", r.Status, r.Body)
	}
	// The device id is free again.
	if _, r := e.create(`{"deviceType":"android","installationId":"a"}`); r.Status != 201 {
		t.Fatalf("recreate: %d", r.Status)
	}
}

func TestInstallationsConcurrentUpsertsMakeOne(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.do("POST", "/1.1/installations", fmt.Sprintf(`{"deviceType":"android","installationId":"same","n%d":1}`, i), e.appHeaders()...)
			if r.Status != 200 && r.Status != 201 {
				t.Errorf("upsert: %d %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	if n := e.count(e.app.ID, 16); n != 1 {
		t.Fatalf("%d installations, want 1", n)
	}
	oid, _ := e.create(`{"deviceType":"android","installationId":"same"}`)
	if doc := e.get(oid); len(doc) != 3+2+16 {
		t.Fatalf("lost updates: %v", doc)
	}
}

func TestInstallationsList(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 12 {
		ch := "even"
		if i%2 == 1 {
			ch = "odd"
		}
		e.now = e.now.Add(time.Second)
		oid, _ := e.create(fmt.Sprintf(`{"deviceType":"android","installationId":"i%02d","channels":[%q],"rank":%d,"valid":%v}`, i, ch, i, i != 3))
		ids = append(ids, oid)
	}
	list := func(q url.Values) (resp, []map[string]any) {
		r := e.do("GET", "/1.1/installations?"+q.Encode(), "", e.masterHeaders()...)
		if r.Status != 200 {
			return r, nil
		}
		m := r.JSON(t)
		var out []map[string]any
		for _, x := range m["results"].([]any) {
			out = append(out, x.(map[string]any))
		}
		return r, out
	}
	ranks := func(rs []map[string]any) string {
		var s []string
		for _, d := range rs {
			s = append(s, fmt.Sprint(d["rank"]))
		}
		return strings.Join(s, ",")
	}
	// Route fields derive from the document: valid:false ⇒ Invalid, channels, ids, updatedAt.
	inst, err := e.st.GetInstallation(context.Background(), e.app.ID, ids[3])
	if err != nil || !inst.Invalid || fmt.Sprint(inst.Channels) != "[odd]" || inst.InstallationID != "i03" || inst.DeviceType != "android" || inst.UpdatedAt != inst.CreatedAt {
		t.Fatalf("route of the stored installation: %+v %v", inst.Route, err)
	}
	_, all := list(url.Values{})
	if len(all) != 12 {
		t.Fatalf("all: %d", len(all))
	}
	_, rs := list(url.Values{"where": {`{"channels":"odd"}`}, "order": {"-rank"}})
	if got := ranks(rs); got != "11,9,7,5,3,1" {
		t.Fatalf("odd desc: %s", got)
	}
	_, rs = list(url.Values{"where": {`{"rank":{"$gte":4}}`}, "order": {"rank"}, "skip": {"2"}, "limit": {"3"}})
	if got := ranks(rs); got != "6,7,8" {
		t.Fatalf("skip/limit: %s", got)
	}
	r, rs := list(url.Values{"where": {`{"valid":false}`}, "count": {"1"}, "keys": {"rank"}})
	m := r.JSON(t)
	if m["count"] != float64(1) || len(rs) != 1 || len(rs[0]) != 4 || rs[0]["rank"] != float64(3) {
		t.Fatalf("count/keys: %s", r.Body)
	}
	r, rs = list(url.Values{"count": {"1"}, "limit": {"0"}})
	if m := r.JSON(t); m["count"] != float64(12) || len(rs) != 0 {
		t.Fatalf("count only: %s", r.Body)
	}
	_, rs = list(url.Values{"limit": {"5000"}, "order": {"-createdAt"}})
	if len(rs) != 12 || rs[0]["objectId"] != ids[11] {
		t.Fatalf("out-of-range limit ⇒ default: %d", len(rs))
	}
	_, rs = list(url.Values{"limit": {"2"}})
	if len(rs) != 2 {
		t.Fatalf("limit 2: %d", len(rs))
	}
	// Point lookups by id hint.
	_, rs = list(url.Values{"where": {`{"installationId":{"$in":["i04","i05","zz"]}}`}, "order": {"rank"}})
	if got := ranks(rs); got != "4,5" {
		t.Fatalf("iid hint: %s", got)
	}
	_, rs = list(url.Values{"where": {fmt.Sprintf(`{"objectId":%q}`, ids[7])}})
	if got := ranks(rs); got != "7" {
		t.Fatalf("objectId hint: %s", got)
	}
	// Sub-query over _Installation.
	_, rs = list(url.Values{"where": {`{"installationId":{"$select":{"query":{"className":"_Installation","where":{"rank":{"$lt":2}}},"key":"installationId"}}}`}, "order": {"rank"}})
	if got := ranks(rs); got != "0,1" {
		t.Fatalf("$select: %s", got)
	}
	bad := []struct {
		q    url.Values
		code int
	}{
		{url.Values{"where": {`{"rank":{"$bogus":1}}`}}, 300},
		{url.Values{"where": {`{"rank":`}}, 107},
		{url.Values{"limit": {"x"}}, 300},
		{url.Values{"skip": {"-1"}}, 300},
		{url.Values{"skip": {"10001"}}, 300},
		{url.Values{"order": {"a..b"}}, 105},
		{url.Values{"keys": {"a."}}, 105},
		{url.Values{"order": {"a.$b"}}, 121},
		{url.Values{"keys": {"$x"}}, 121},
	}
	for _, c := range bad {
		r, _ := list(c.q)
		if r.Status != 400 || r.Code(t) != c.code {
			t.Errorf("%v: got %d %s, want code %d", c.q, r.Status, r.Body, c.code)
		}
	}
}

func TestInstallationsAppendTimeIDMatchesEncodingJSON(t *testing.T) {
	now := time.Date(2031, 2, 3, 4, 5, 6, 789_000_000, time.FixedZone("x", 3600))
	for _, oid := range []string{"0a1b2c3d4e5f60718293a4b5", "", `q"uote`, `back\slash`, "<b>&", "\x01", "ünï", "\u2028", "bad\xff"} {
		tb, _ := json.Marshal(push.FormatTime(now))
		ob, _ := json.Marshal(oid)
		want := `{"updatedAt":` + string(tb) + `,"objectId":` + string(ob) + `}`
		if got := string(appendTimeID(nil, fUpdatedAt, now, oid)); got != want {
			t.Errorf("appendTimeID(%q) = %s, want %s", oid, got, want)
		}
	}
}

// TestInstallationsSizeBounds: PUTs and upserts may not grow a document past maxDocBytes, nor its
// channels past maxChannels; the refused write changes nothing.
func TestInstallationsSizeBounds(t *testing.T) {
	e := newEnv(t)
	oid, _ := e.create(`{"deviceType":"android","installationId":"grow"}`)
	pad := strings.Repeat("y", 15000)
	for i := 1; i <= 2; i++ {
		if r := e.do("PUT", "/1.1/installations/"+oid, fmt.Sprintf(`{"pad%d":%q}`, i, pad), e.appHeaders()...); r.Status != 200 {
			t.Fatalf("PUT %d: %d %s", i, r.Status, r.Body)
		}
	}
	before := e.get(oid)
	for name, send := range map[string]func() resp{
		"PUT": func() resp {
			return e.do("PUT", "/1.1/installations/"+oid, `{"pad3":"`+pad+`"}`, e.appHeaders()...)
		},
		"upsert": func() resp {
			return e.do("POST", "/1.1/installations", `{"deviceType":"android","installationId":"grow","pad3":"`+pad+`"}`, e.appHeaders()...)
		},
	} {
		r := send()
		if r.Status != 400 || r.Code(t) != 116 || !strings.Contains(errText(t, r), fmt.Sprintf("at most %d", maxDocBytes)) {
			t.Fatalf("%s past the document limit: %d %s", name, r.Status, r.Body)
		}
	}
	if after := e.get(oid); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("a refused write changed the document")
	}

	chans := make([]string, maxChannels+1)
	for i := range chans {
		chans[i] = fmt.Sprintf(`"c%d"`, i)
	}
	many, _ := e.create(`{"deviceType":"android","installationId":"many","channels":[` + strings.Join(chans[:maxChannels], ",") + `]}`)
	r := e.do("PUT", "/1.1/installations/"+many, `{"channels":{"__op":"AddUnique","objects":["one-more"]}}`, e.appHeaders()...)
	if r.Status != 400 || r.Code(t) != 1 || !strings.Contains(errText(t, r), "at most 1000 channels") {
		t.Fatalf("channel %d: %d %s", maxChannels+1, r.Status, r.Body)
	}
	if got := len(e.get(many)["channels"].([]any)); got != maxChannels {
		t.Fatalf("%d channels after the refused PUT", got)
	}
}

func TestInstallationsLocationUsesPublicURL(t *testing.T) {
	for _, public := range []string{"https://push.example.com", "https://push.example.com/", "https://push.example.com//"} {
		e := newEnv(t, func(c *Config, _ *Deps) { c.PublicURL = public })
		oid, r := e.create(`{"deviceType":"android","installationId":"loc"}`)
		if loc := string(r.Header.Peek("Location")); loc != "https://push.example.com/1.1/installations/"+oid {
			t.Fatalf("--public-url %q: Location %q", public, loc)
		}
	}
}

// TestInstallationsNullBuiltInIsAbsent checks that null on a built-in field removes it, on
// create, upsert and PUT (as {"__op":"Delete"} does), while a custom field keeps its null.
func TestInstallationsNullBuiltInIsAbsent(t *testing.T) {
	e := newEnv(t)
	builtIns := []string{"vendor", "registrationId", "deviceProfile", "apnsTopic", "apnsTeamId", "timeZone", "channels", "valid", "badge"}
	absent := func(oid string, fields ...string) {
		t.Helper()
		doc := e.get(oid)
		for _, f := range fields {
			if v, ok := doc[f]; ok {
				t.Fatalf("%s = %v after null, want it absent: %v", f, v, doc)
			}
		}
	}
	oid, r := e.create(`{"deviceType":"android","installationId":"n1","vendor":null,"registrationId":null,"deviceProfile":null,` +
		`"apnsTopic":null,"apnsTeamId":null,"timeZone":null,"channels":null,"valid":null,"badge":null,"custom":null}`)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	absent(oid, builtIns...)
	if doc := e.get(oid); doc["custom"] != nil || !hasKey(doc, "custom") {
		t.Fatalf("custom = %v, want a stored null: %v", doc["custom"], doc)
	}

	set := `{"vendor":"mi","registrationId":"reg-n1","deviceProfile":"p1","apnsTopic":"t","apnsTeamId":"T",` +
		`"timeZone":"Asia/Shanghai","channels":["a"],"valid":true,"badge":3}`
	if r := e.do("PUT", "/1.1/installations/"+oid, set, e.appHeaders()...); r.Status != 200 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	if doc := e.get(oid); doc["vendor"] != "mi" || doc["registrationId"] != "reg-n1" {
		t.Fatalf("PUT did not set the fields: %v", doc)
	}
	nulls := `{"vendor":null,"registrationId":null,"deviceProfile":null,"apnsTopic":null,"apnsTeamId":null,` +
		`"channels":null,"valid":null,"badge":null}`
	if r := e.do("PUT", "/1.1/installations/"+oid, nulls, e.appHeaders()...); r.Status != 200 {
		t.Fatalf("PUT nulls: %d %s", r.Status, r.Body)
	}
	absent(oid, "vendor", "registrationId", "deviceProfile", "apnsTopic", "apnsTeamId", "channels", "valid", "badge")
	// registrationId is gone from the device index too: another installation may take it.
	if _, r := e.create(`{"deviceType":"android","installationId":"n2","registrationId":"reg-n1"}`); r.Status != 201 {
		t.Fatalf("reusing the removed registrationId: %d %s", r.Status, r.Body)
	}

	// The upsert ("the app was opened") merges the same way.
	if _, r := e.create(`{"deviceType":"android","installationId":"n1","timeZone":null}`); r.Status != 200 {
		t.Fatalf("upsert: %d %s", r.Status, r.Body)
	}
	absent(oid, "timeZone")

	// A null device id is missing where it is required, and a change where it is not.
	ios, _ := e.create(`{"deviceType":"ios","deviceToken":"` + tokA + `","installationId":"n3"}`)
	for _, c := range []struct {
		oid, body string
		code      int
	}{{oid, `{"installationId":null}`, 113}, {ios, `{"deviceToken":null}`, 113}, {ios, `{"installationId":null}`, 117}} {
		if r := e.do("PUT", "/1.1/installations/"+c.oid, c.body, e.appHeaders()...); r.Status != 400 || r.Code(t) != c.code {
			t.Fatalf("PUT %s: %d %s, want code %d", c.body, r.Status, r.Body, c.code)
		}
	}
	// The upsert treats it alike: an iOS installation keeps its installationId, an Android one
	// its FCM deviceToken.
	if r := e.do("POST", "/1.1/installations", `{"deviceType":"ios","deviceToken":"`+tokA+`","installationId":null}`, e.appHeaders()...); r.Status != 400 || r.Code(t) != 117 {
		t.Fatalf("upsert with a null installationId: %d %s, want code 117", r.Status, r.Body)
	}
	if doc := e.get(ios); doc["installationId"] != "n3" {
		t.Fatalf("installationId after the upsert: %v", doc)
	}
	fcm, _ := e.create(`{"deviceType":"android","installationId":"n4","deviceToken":"fcm-Token-1"}`)
	if r := e.do("POST", "/1.1/installations", `{"deviceType":"android","installationId":"n4","deviceToken":{"__op":"Delete"}}`, e.appHeaders()...); r.Status != 400 || r.Code(t) != 117 {
		t.Fatalf("upsert deleting the deviceToken: %d %s, want code 117", r.Status, r.Body)
	}
	if doc := e.get(fcm); doc["deviceToken"] != "fcm-Token-1" {
		t.Fatalf("deviceToken after the upsert: %v", doc)
	}
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }
