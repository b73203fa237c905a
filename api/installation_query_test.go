package api

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
)

// queryIDs runs GET /1.1/installations with where (master key) and returns the response and
// the sorted objectIds of its results (nil when the status is not 200).
func (e *testEnv) queryIDs(where string) (resp, []string) {
	e.t.Helper()
	r := e.do("GET", "/1.1/installations?"+url.Values{"where": {where}, "limit": {"1000"}}.Encode(), "", e.masterHeaders()...)
	if r.Status != 200 {
		return r, nil
	}
	ids := []string{}
	for _, x := range r.JSON(e.t)["results"].([]any) {
		ids = append(ids, x.(map[string]any)["objectId"].(string))
	}
	slices.Sort(ids)
	return r, ids
}

// wantIDs fails unless where selects exactly want (in any order).
func (e *testEnv) wantIDs(where string, want ...string) {
	e.t.Helper()
	r, got := e.queryIDs(where)
	if r.Status != 200 {
		e.t.Errorf("where %s: got %d %s, want 200", where, r.Status, r.Body)
		return
	}
	want = slices.Clone(want)
	slices.Sort(want)
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		e.t.Errorf("where %s: got %v, want %v", where, got, want)
	}
}

// A $select on channels means "channels holds any of the values" (Parse rewrites it to $in):
// the listing must not read only the first value's channel index.
func TestInstallationQuerySelectOnChannels(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 4 {
		tag := []string{"even", "odd"}[i%2]
		oid, _ := e.create(fmt.Sprintf(`{"deviceType":"android","installationId":"sel-%d","channels":[%q],"tag":%q}`, i, tag, tag))
		ids = append(ids, oid)
	}
	sel := func(where string) string {
		return `{"channels":{"$select":{"query":{"className":"_Installation","where":` + where + `},"key":"tag"}}}`
	}
	e.wantIDs(sel(`{}`), ids...)
	e.wantIDs(sel(`{"tag":"odd"}`), ids[1], ids[3])
	e.wantIDs(sel(`{"tag":"none"}`))
}

// seed stores n android installations {objectId: <prefix>NNNN, tag} directly in the store.
func (e *testEnv) seed(prefix, tag string, n int) {
	e.t.Helper()
	insts := make([]push.Installation, n)
	for i := range insts {
		oid := fmt.Sprintf("%s%04d", prefix, i)
		r := push.Route{ObjectID: oid, DeviceType: push.DeviceAndroid, InstallationID: "iid-" + oid, UpdatedAt: e.now.UnixMilli()}
		doc := fmt.Sprintf(`{"objectId":%q,"deviceType":"android","installationId":"iid-%s","tag":%q,"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z"}`, oid, oid, tag)
		insts[i] = push.Installation{Route: r, CreatedAt: e.now.UnixMilli(), Doc: []byte(doc)}
	}
	if err := e.st.SeedInstallations(e.app.ID, e.app.Settings.Buckets, insts); err != nil {
		e.t.Fatal(err)
	}
}

// A sub-query whose results exclude installations may not be cut at the cap: the query is
// refused with 300 instead of matching installations it excludes.
func TestInstallationQueryExclusionOverCap(t *testing.T) {
	e := newEnv(t)
	e.seed("many", "x", query.MaxSubqueryResults+1)
	keep, _ := e.create(`{"deviceType":"android","installationId":"keep-1","tag":"y"}`)
	for _, where := range []string{
		`{"objectId":{"$dontSelect":{"query":{"className":"_Installation","where":{"tag":"x"}},"key":"objectId"}}}`,
		`{"peer":{"$notInQuery":{"className":"_Installation","where":{"tag":"x"}}}}`,
		`{"$nor":[{"objectId":{"$select":{"query":{"className":"_Installation","where":{"tag":"x"}},"key":"objectId"}}}]}`,
	} {
		r, ids := e.queryIDs(where)
		if r.Status != 400 || r.Code(t) != 300 || !strings.Contains(r.JSON(t)["error"].(string), "more than 1000") {
			t.Errorf("where %s: got %d with %d results (%.200s), want 400 code 300 saying more than 1000", where, r.Status, len(ids), r.Body)
		}
	}
	// Within the cap the exclusion is complete.
	e.wantIDs(`{"objectId":{"$dontSelect":{"query":{"className":"_Installation","where":{"tag":"x","objectId":{"$ne":"many0000"}}},"key":"objectId"}}}`, "many0000", keep)
	// Where a cut only loses matches, the cap applies.
	r, ids := e.queryIDs(`{"objectId":{"$select":{"query":{"className":"_Installation","where":{"tag":"x"}},"key":"objectId"}}}`)
	if r.Status != 200 || len(ids) != query.MaxSubqueryResults {
		t.Errorf("positive $select over the cap: got %d with %d results, want 200 with %d", r.Status, len(ids), query.MaxSubqueryResults)
	}
}

// Queries that match nothing must return nothing, though they read no field.
func TestInstallationQueryMatchNothing(t *testing.T) {
	e := newEnv(t)
	a, _ := e.create(`{"deviceType":"android","installationId":"none-1"}`)
	b, _ := e.create(`{"deviceType":"android","installationId":"none-2"}`)
	for _, where := range []string{`{"$nor":[{}]}`, `{"$not":{}}`, `[{},{"$not":{}}]`, `{"$and":[{"$nor":[{}]}]}`} {
		e.wantIDs(where)
		r := e.do("GET", "/1.1/installations?"+url.Values{"where": {where}, "count": {"1"}, "limit": {"0"}}.Encode(), "", e.masterHeaders()...)
		if r.Status != 200 || r.JSON(t)["count"] != float64(0) {
			t.Errorf("where %s count: got %d %s, want 200 with count 0", where, r.Status, r.Body)
		}
	}
	for _, where := range []string{`{}`, `[{}]`, `{"$or":[{},{"x":1}]}`, `{"$nor":[{"$nor":[{}]}]}`} {
		e.wantIDs(where, a, b)
	}
}

// The by_device index holds device ids as stored: an FCM token keeps its case (only iOS
// tokens and installationIds are lower-cased on write), so a query by deviceToken must look
// up the token as given.
func TestInstallationQueryDeviceTokenKeepsCase(t *testing.T) {
	e := newEnv(t)
	const fcm = "FcmTokenMixedCase:APA91b"
	oid, _ := e.create(`{"deviceType":"android","installationId":"case-1","deviceToken":"` + fcm + `"}`)
	ios, _ := e.create(`{"deviceType":"ios","deviceToken":"` + tokA + `"}`)
	e.wantIDs(`{"deviceToken":"`+fcm+`"}`, oid)
	e.wantIDs(`{"deviceToken":{"$in":["`+fcm+`","nope"]}}`, oid)
	e.wantIDs(`{"deviceToken":{"$in":["`+fcm+`","`+strings.ToLower(tokA)+`"]}}`, oid, ios)
	// Stored values compare exactly: a token in another case is another token.
	e.wantIDs(`{"deviceToken":"` + strings.ToLower(fcm) + `"}`)
	e.wantIDs(`{"deviceToken":"` + tokA + `"}`)
	e.wantIDs(`{"installationId":"CASE-1"}`)
	e.wantIDs(`{"installationId":"case-1"}`, oid)
}

// A Date's iso without a zone is UTC, as push_time reads it; garbage is still refused.
func TestInstallationQueryDateWithoutZone(t *testing.T) {
	e := newEnv(t) // e.now is 2026-03-04T05:06:07.891Z
	oid, _ := e.create(`{"deviceType":"android","installationId":"date-1"}`)
	date := func(iso string) string { return `{"__type":"Date","iso":"` + iso + `"}` }
	e.wantIDs(`{"createdAt":`+date("2026-03-04T05:06:07.891")+`}`, oid)
	e.wantIDs(`{"createdAt":{"$gt":`+date("2026-03-04T05:06:07")+`}}`, oid)
	e.wantIDs(`{"createdAt":{"$lt":` + date("2026-03-04T05:06:07") + `}}`)
	for _, iso := range []string{"yesterday", "2026-03-04", "2026-03-04T05:06:07+0800", "2026-03-04T05:06"} {
		r, _ := e.queryIDs(`{"createdAt":` + date(iso) + `}`)
		if r.Status != 400 || r.Code(t) != 111 || !strings.Contains(r.JSON(t)["error"].(string), "ISO 8601") {
			t.Errorf("iso %q: got %d %s, want 400 code 111 naming ISO 8601", iso, r.Status, r.Body)
		}
	}
}

// On createdAt and updatedAt a string operand is a date (Parse Server's valueAsDate), so
// equal times written differently match and comparisons go by instant, not by text.
func TestInstallationQueryDateStrings(t *testing.T) {
	e := newEnv(t) // e.now is 2026-03-04T05:06:07.891Z
	oid, _ := e.create(`{"deviceType":"android","installationId":"dstr-1"}`)
	for _, where := range []string{
		`{"createdAt":"2026-03-04T05:06:07.891Z"}`,
		`{"createdAt":"2026-03-04T13:06:07.891+08:00"}`,
		`{"createdAt":{"$eq":"2026-03-04T05:06:07.891"}}`,
		`{"updatedAt":{"$gt":"2026-03-04T12:00:00+08:00"}}`, // 04:00Z; as text "05:06" < "12:00"
		`{"updatedAt":{"$lte":"2026-03-04T05:06:07.891Z","$gte":"2026-03-04T05:06:07Z"}}`,
		`{"createdAt":{"$in":["2020-01-01T00:00:00Z","2026-03-04T05:06:07.891+00:00"]}}`,
		`{"createdAt":{"$nin":["2026-03-04T05:06:07Z"]}}`,
		`{"createdAt":{"$ne":"2026-03-04T05:06:07Z"}}`,
	} {
		e.wantIDs(where, oid)
	}
	for _, where := range []string{
		`{"createdAt":"2026-03-04T05:06:07Z"}`,
		`{"updatedAt":{"$gt":"2026-03-04T14:00:00+08:00"}}`,
		`{"createdAt":{"$ne":"2026-03-04T13:06:07.891+08:00"}}`,
	} {
		e.wantIDs(where)
	}
	for _, where := range []string{`{"createdAt":"2026"}`, `{"updatedAt":{"$gt":"yesterday"}}`, `{"createdAt":{"$in":["2026-03-04T05:06:07Z","x"]}}`} {
		r, _ := e.queryIDs(where)
		if r.Status != 400 || r.Code(t) != 111 || !strings.Contains(r.JSON(t)["error"].(string), "ISO 8601") {
			t.Errorf("where %s: got %d %s, want 400 code 111 naming ISO 8601", where, r.Status, r.Body)
		}
	}
}

// {"$relativeTime": …} counts from the request's time: the listing sees the devices refreshed
// in the last days of the server's clock, and a malformed relative time is 300.
func TestInstallationQueryRelativeTime(t *testing.T) {
	e := newEnv(t) // e.now is 2026-03-04T05:06:07.891Z
	old, _ := e.create(`{"deviceType":"android","installationId":"rel-old"}`)
	e.now = e.now.AddDate(0, 0, 10)
	recent, _ := e.create(`{"deviceType":"android","installationId":"rel-new"}`)
	e.now = e.now.Add(time.Hour)
	e.wantIDs(`{"updatedAt":{"$gt":{"$relativeTime":"3 days ago"}}}`, recent)
	e.wantIDs(`{"updatedAt":{"$lt":{"$relativeTime":"1 week ago"}}}`, old)
	e.wantIDs(`{"createdAt":{"$gte":{"$relativeTime":"10 days 1 hour ago"}}}`, old, recent)
	e.wantIDs(`{"createdAt":{"$gt":{"$relativeTime":"in 1 min"}}}`)
	for _, where := range []string{`{"updatedAt":{"$gt":{"$relativeTime":"3 days"}}}`, `{"updatedAt":{"$relativeTime":"3 days ago"}}`} {
		if r, _ := e.queryIDs(where); r.Status != 400 || r.Code(t) != 300 || !strings.Contains(r.JSON(t)["error"].(string), "$relativeTime") {
			t.Errorf("where %s: got %d %s, want 400 code 300 naming $relativeTime", where, r.Status, r.Body)
		}
	}
}

// Values of types _Installation has no column of are not supported: 300, like any other
// unsupported part of a where (a malformed Date stays 111).
func TestInstallationQueryUnsupportedTypes(t *testing.T) {
	e := newEnv(t)
	for where, code := range map[string]int{
		`{"a":{"__type":"Bytes","base64":"AA=="}}`:                               300,
		`{"a":{"$in":[{"__type":"Polygon","coordinates":[[0,0],[0,1],[1,0]]}]}}`: 300,
		`{"a":{"__type":"Object","className":"X"}}`:                              300,
		`{"a":{"__type":"File","name":"f.png"}}`:                                 300,
		`{"a":{"__type":"Date","iso":"soon"}}`:                                   111,
	} {
		r, _ := e.queryIDs(where)
		if r.Status != 400 || r.Code(t) != code {
			t.Errorf("where %s: got %d %s, want 400 code %d", where, r.Status, r.Body, code)
		}
	}
}

// Parse Server flattens arrays in a $in/$nin list one level and takes $all with regex
// values (the SDKs' containsAllStartingWith).
func TestInstallationQueryNestedInAndAllRegex(t *testing.T) {
	e := newEnv(t)
	a, _ := e.create(`{"deviceType":"android","installationId":"nest-1","channels":["sports","news"]}`)
	b, _ := e.create(`{"deviceType":"android","installationId":"nest-2","channels":["music"]}`)
	e.wantIDs(`{"channels":{"$in":[["news","art"]]}}`, a)
	e.wantIDs(`{"channels":{"$nin":[["news","art"]]}}`, b)
	e.wantIDs(`{"installationId":{"$in":[["nest-2","nest-9"]]}}`, b) // a point lookup through the hint
	e.wantIDs(`{"channels":{"$all":[{"$regex":"^spo"},{"$regex":"^ne"}]}}`, a)
	e.wantIDs(`{"channels":{"$all":[{"$regex":"^MU","$options":"i"}]}}`, b)
	e.wantIDs(`{"channels":{"$all":[{"$regex":"^spo"},{"$regex":"^mu"}]}}`)
	r, _ := e.queryIDs(`{"channels":{"$all":["news",{"$regex":"^spo"}]}}`)
	if r.Status != 400 || r.Code(t) != 300 {
		t.Errorf("$all mixing values and regexes: got %d %s, want 400 code 300", r.Status, r.Body)
	}
}

// order and keys take dotted paths (order by the nested value, keys return the root field, as
// Parse does), skip empty entries, and a field ordered twice sorts as its last mention says.
func TestInstallationsListPathsAndEntries(t *testing.T) {
	e := newEnv(t)
	for i, v := range []int{3, 1, 2} {
		e.create(fmt.Sprintf(`{"deviceType":"android","installationId":"p%d","a":{"b":%d,"c":"x%d"},"g":%d}`, i, v, i, v))
	}
	list := func(q string) []map[string]any {
		t.Helper()
		r := e.do("GET", "/1.1/installations?"+q, "", e.masterHeaders()...)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
		var out []map[string]any
		for _, x := range r.JSON(t)["results"].([]any) {
			out = append(out, x.(map[string]any))
		}
		return out
	}
	nested := func(rs []map[string]any) (bs []any) {
		for _, r := range rs {
			bs = append(bs, r["a"].(map[string]any)["b"])
		}
		return bs
	}
	if got := nested(list("order=-a.b")); fmt.Sprint(got) != "[3 2 1]" {
		t.Errorf("order=-a.b: %v", got)
	}
	if got := nested(list("order=g,-g")); fmt.Sprint(got) != "[3 2 1]" {
		t.Errorf("order=g,-g (the last mention wins): %v", got)
	}
	rs := list("keys=a.b,,&order=,g,")
	if len(rs) != 3 || len(rs[0]) != 4 || rs[0]["a"] == nil || rs[0]["g"] != nil || fmt.Sprint(nested(rs)) != "[1 2 3]" {
		t.Errorf("keys=a.b,, order=,g,: %v", rs)
	}
}

// An array field sorts as Mongo sorts it, for Parse clients: by its smallest element
// ascending, by its largest descending, an empty array below a missing field either way.
func TestInstallationsOrderByArray(t *testing.T) {
	e := newEnv(t)
	for _, d := range []string{
		`"name":"mid","tags":[5,2,9]`, `"name":"low","tags":[1,10]`, `"name":"one","tags":[7]`,
		`"name":"empty","tags":[]`, `"name":"none"`, `"name":"scalar","tags":4`,
	} {
		e.create(`{"deviceType":"android","installationId":"arr-` + strings.SplitN(d, `"`, 5)[3] + `",` + d + `}`)
	}
	names := func(order string) string {
		t.Helper()
		r := e.do("GET", "/1.1/installations?order="+order+",name&keys=name", "", e.masterHeaders()...)
		if r.Status != 200 {
			t.Fatalf("order=%s: %d %s", order, r.Status, r.Body)
		}
		var out []string
		for _, x := range r.JSON(t)["results"].([]any) {
			out = append(out, x.(map[string]any)["name"].(string))
		}
		return strings.Join(out, " ")
	}
	// Ascending by the smallest: empty < none (missing) < low 1 < mid 2 < scalar 4 < one 7.
	if got, want := names("tags"), "empty none low mid scalar one"; got != want {
		t.Errorf("order=tags: %s, want %s", got, want)
	}
	// Descending by the largest: low 10 > mid 9 > one 7 > scalar 4 > none > empty.
	if got, want := names("-tags"), "low mid one scalar none empty"; got != want {
		t.Errorf("order=-tags: %s, want %s", got, want)
	}

	// A dotted path goes into the objects of an array, as the where language does (decisions,
	// where language 13): the cities found sort as one array.
	e2 := newEnv(t)
	for _, d := range []string{
		`"name":"a","trips":[{"city":"Rome"},{"city":"Oslo"}]`, `"name":"b","trips":[{"city":"Lima"},{"x":1},7]`,
		`"name":"c","trips":{"city":"Paris"}`, `"name":"d","trips":[{"city":["Bonn","Zurich"]}]`, `"name":"e","trips":[{"y":2}]`,
	} {
		e2.create(`{"deviceType":"android","installationId":"trip-` + strings.SplitN(d, `"`, 5)[3] + `",` + d + `}`)
	}
	e = e2
	if got, want := names("trips.city"), "e d b a c"; got != want { // missing, Bonn, Lima, Oslo, Paris
		t.Errorf("order=trips.city: %s, want %s", got, want)
	}
	if got, want := names("-trips.city"), "d a c b e"; got != want { // Zurich, Rome, Paris, Lima, missing
		t.Errorf("order=-trips.city: %s, want %s", got, want)
	}
}

// Dates in a document are checked and stored in the API's form, as Parse does: a Date without
// a valid iso is 111 and changes nothing; an offset or a missing zone becomes UTC milliseconds.
func TestInstallationsDateValues(t *testing.T) {
	e := newEnv(t)
	oid, _ := e.create(`{"deviceType":"android","installationId":"d1","seen":{"__type":"Date","iso":"2024-03-01T23:30:00+08:00"},` +
		`"trip":{"from":{"__type":"Date","iso":"2024-03-02T01:02:03.4"}},"log":[{"__type":"Date","iso":"2024-03-03T00:00:00Z"}]}`)
	doc := e.get(oid)
	if got := fmt.Sprint(doc["seen"], doc["trip"], doc["log"]); got !=
		"map[__type:Date iso:2024-03-01T15:30:00.000Z] map[from:map[__type:Date iso:2024-03-02T01:02:03.400Z]] [map[__type:Date iso:2024-03-03T00:00:00.000Z]]" {
		t.Fatalf("stored dates: %s", got)
	}
	r := e.do("GET", "/1.1/installations?where="+url.QueryEscape(`{"seen":{"$gt":{"__type":"Date","iso":"2024-03-01T15:00:00Z"}}}`), "", e.masterHeaders()...)
	if r.Status != 200 || len(r.JSON(t)["results"].([]any)) != 1 {
		t.Fatalf("query on a stored date: %d %s", r.Status, r.Body)
	}
	for _, bad := range []string{
		`{"seen":{"__type":"Date"}}`,
		`{"seen":{"__type":"Date","iso":"garbage"}}`,
		`{"seen":{"__type":"Date","iso":5}}`,
		`{"seen":{"__type":"Date","iso":"2024-03-01T00:00:00Z","extra":1}}`,
		`{"trip":{"from":{"__type":"Date","iso":"2024-02-30T00:00:00Z"}}}`,
		`{"log":{"__op":"Add","objects":[{"__type":"Date","iso":"yesterday"}]}}`,
	} {
		r := e.do("PUT", "/1.1/installations/"+oid, bad, e.appHeaders()...)
		if r.Status != 400 || r.Code(t) != 111 || !strings.Contains(errText(t, r), "not a valid Date") {
			t.Errorf("PUT %s: %d %s, want 111", bad, r.Status, r.Body)
		}
	}
	if after := e.get(oid); fmt.Sprint(after) != fmt.Sprint(doc) {
		t.Fatal("a refused Date changed the document")
	}
}
