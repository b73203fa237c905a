package query

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// doc decodes a JSON document the way stored installations are decoded.
func doc(t testing.TB, s string) MapDoc {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test doc %s: %v", s, err)
	}
	return MapDoc(m)
}

// install is a typical stored installation.
const install = `{
	"objectId": "o1", "deviceType": "ios", "deviceToken": "tok1",
	"channels": ["sports", "news"], "badge": 5, "valid": true, "vendor": null,
	"createdAt": "2015-06-29T01:39:35.931Z", "updatedAt": "2024-03-01T12:00:00Z",
	"birthday": {"__type": "Date", "iso": "2000-01-02T03:04:05.000Z"},
	"location": {"__type": "GeoPoint", "latitude": 40.0, "longitude": -30.0},
	"owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"},
	"profile": {"age": 30, "tags": ["a", "b"], "name": "Ann"},
	"scores": [1, 5, 9], "timeZone": "Asia/Shanghai", "empty": []
}`

type matchCase struct {
	name  string
	where string
	doc   string // "" means install
	want  bool
}

func runMatch(t *testing.T, cases []matchCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := Parse(json.RawMessage(c.where))
			if err != nil {
				t.Fatalf("Parse(%s): %v", c.where, err)
			}
			src := c.doc
			if src == "" {
				src = install
			}
			if got := q.Match(doc(t, src)); got != c.want {
				t.Errorf("Match(%s) on %s: got %v, want %v", c.where, src, got, c.want)
			}
		})
	}
}

func TestQueryMatchAll(t *testing.T) {
	runMatch(t, []matchCase{
		{"empty object", `{}`, "", true},
		{"null", `null`, "", true},
		{"empty array", `[]`, "", true},
		{"empty input", ``, "", true},
		{"whitespace", "  \n", "", true},
	})
	var nilQuery *Query
	if !nilQuery.Match(MapDoc{}) {
		t.Errorf("nil query: got false, want true")
	}
}

func TestQueryEquality(t *testing.T) {
	runMatch(t, []matchCase{
		{"string equal", `{"deviceType":"ios"}`, "", true},
		{"string differs", `{"deviceType":"android"}`, "", false},
		{"number equal", `{"badge":5}`, "", true},
		{"number differs", `{"badge":5.5}`, "", false},
		{"number vs string", `{"badge":"5"}`, "", false},
		{"bool", `{"valid":true}`, "", true},
		{"bool differs", `{"valid":false}`, "", false},
		{"array contains", `{"channels":"sports"}`, "", true},
		{"array does not contain", `{"channels":"music"}`, "", false},
		{"array exact equal", `{"channels":["sports","news"]}`, "", true},
		{"array other order", `{"channels":["news","sports"]}`, "", false},
		{"array subset is not equal", `{"channels":["sports"]}`, "", false},
		{"empty array equal", `{"empty":[]}`, "", true},
		{"number array contains", `{"scores":9}`, "", true},
		{"missing field", `{"nosuch":"x"}`, "", false},
		{"null matches null", `{"vendor":null}`, "", true},
		{"null matches missing", `{"nosuch":null}`, "", true},
		{"null does not match value", `{"deviceType":null}`, "", false},
		{"$eq", `{"deviceType":{"$eq":"ios"}}`, "", true},
		{"$eq array contains", `{"channels":{"$eq":"news"}}`, "", true},
		{"object literal equal", `{"profile":{"age":30,"tags":["a","b"],"name":"Ann"}}`, "", true},
		{"object literal differs", `{"profile":{"age":30}}`, "", false},
		{"several fields all hold", `{"deviceType":"ios","badge":5,"channels":"news"}`, "", true},
		{"several fields one fails", `{"deviceType":"ios","badge":6}`, "", false},
		{"escaped unicode", `{"timeZone":"Asia\/Shanghai"}`, "", true},
	})
}

func TestQueryNe(t *testing.T) {
	runMatch(t, []matchCase{
		{"scalar differs", `{"deviceType":{"$ne":"android"}}`, "", true},
		{"scalar equal", `{"deviceType":{"$ne":"ios"}}`, "", false},
		{"missing field", `{"nosuch":{"$ne":"x"}}`, "", true},
		{"array element equals", `{"channels":{"$ne":"sports"}}`, "", false},
		{"no array element equals", `{"channels":{"$ne":"music"}}`, "", true},
		{"ne null on value", `{"deviceType":{"$ne":null}}`, "", true},
		{"ne null on null", `{"vendor":{"$ne":null}}`, "", false},
		{"ne null on missing", `{"nosuch":{"$ne":null}}`, "", false},
		{"number", `{"badge":{"$ne":4}}`, "", true},
	})
}

func TestQueryComparison(t *testing.T) {
	runMatch(t, []matchCase{
		{"gt true", `{"badge":{"$gt":3}}`, "", true},
		{"gt equal", `{"badge":{"$gt":5}}`, "", false},
		{"gte equal", `{"badge":{"$gte":5}}`, "", true},
		{"lt", `{"badge":{"$lt":6}}`, "", true},
		{"lte below", `{"badge":{"$lte":4}}`, "", false},
		{"range", `{"badge":{"$gt":1,"$lt":10}}`, "", true},
		{"range excludes", `{"badge":{"$gt":5,"$lt":10}}`, "", false},
		{"string gt", `{"deviceType":{"$gt":"android"}}`, "", true},
		{"string lt", `{"deviceType":{"$lt":"android"}}`, "", false},
		{"type mismatch never matches", `{"deviceType":{"$gt":1}}`, "", false},
		{"missing never matches", `{"nosuch":{"$lt":1}}`, "", false},
		{"array any element gt", `{"scores":{"$gt":8}}`, "", true},
		{"array no element gt", `{"scores":{"$gt":9}}`, "", false},
		{"array any element lt", `{"scores":{"$lt":2}}`, "", true},
		{"bool", `{"valid":{"$gt":false}}`, "", true},
		{"null value", `{"vendor":{"$gte":0}}`, "", false},
	})
}

func TestQueryDates(t *testing.T) {
	runMatch(t, []matchCase{
		{"iso string field gt", `{"createdAt":{"$gt":{"__type":"Date","iso":"2015-01-01T00:00:00.000Z"}}}`, "", true},
		{"iso string field lt", `{"createdAt":{"$lt":{"__type":"Date","iso":"2015-01-01T00:00:00Z"}}}`, "", false},
		{"iso string field equal", `{"createdAt":{"__type":"Date","iso":"2015-06-29T01:39:35.931Z"}}`, "", true},
		{"iso string equal other offset", `{"createdAt":{"__type":"Date","iso":"2015-06-29T09:39:35.931+08:00"}}`, "", true},
		{"date object field gte", `{"birthday":{"$gte":{"__type":"Date","iso":"2000-01-02T03:04:05Z"}}}`, "", true},
		{"date object field gt", `{"birthday":{"$gt":{"__type":"Date","iso":"2000-01-02T03:04:05Z"}}}`, "", false},
		{"date object equal", `{"birthday":{"__type":"Date","iso":"2000-01-02T03:04:05Z"}}`, "", true},
		{"date object in", `{"birthday":{"$in":[{"__type":"Date","iso":"2000-01-02T03:04:05.000Z"}]}}`, "", true},
		{"date ne", `{"updatedAt":{"$ne":{"__type":"Date","iso":"2024-03-01T12:00:00Z"}}}`, "", false},
		{"updatedAt window", `{"updatedAt":{"$gte":{"__type":"Date","iso":"2024-01-01T00:00:00Z"},"$lt":{"__type":"Date","iso":"2024-04-01T00:00:00Z"}}}`, "", true},
		{"date vs non date string", `{"timeZone":{"$gt":{"__type":"Date","iso":"2000-01-01T00:00:00Z"}}}`, "", false},
		{"date vs number", `{"badge":{"$gt":{"__type":"Date","iso":"2000-01-01T00:00:00Z"}}}`, "", false},
		{"string operand on another field compares text", `{"timeZone":{"$gt":"Asia/S"}}`, "", true},
		// On createdAt and updatedAt a string operand is a date (Parse Server's valueAsDate).
		{"createdAt string equal", `{"createdAt":"2015-06-29T01:39:35.931Z"}`, "", true},
		{"createdAt string equal other form", `{"createdAt":"2015-06-29T09:39:35.931+08:00"}`, "", true},
		{"updatedAt string equal without millis", `{"updatedAt":"2024-03-01T12:00:00.000Z"}`, "", true},
		{"updatedAt string $eq", `{"updatedAt":{"$eq":"2024-03-01T20:00:00+08:00"}}`, "", true},
		{"updatedAt string $ne", `{"updatedAt":{"$ne":"2024-03-01T20:00:00+08:00"}}`, "", false},
		{"updatedAt string $gt by instant", `{"updatedAt":{"$gt":"2024-03-01T19:00:00+08:00"}}`, "", true},
		{"updatedAt string $gt by instant, not text", `{"updatedAt":{"$gt":"2024-03-01T20:00:00+08:00"}}`, "", false},
		{"updatedAt string $lte", `{"updatedAt":{"$lte":"2024-03-01T12:00:00"}}`, "", true},
		{"updatedAt string $lt", `{"updatedAt":{"$lt":"2024-03-01T12:00:00Z"}}`, "", false},
		{"createdAt string $gte and $lt", `{"createdAt":{"$gte":"2015-01-01T00:00:00Z","$lt":"2016-01-01T00:00:00Z"}}`, "", true},
		{"createdAt string $in", `{"createdAt":{"$in":["2000-01-01T00:00:00Z","2015-06-29T01:39:35.931+00:00"]}}`, "", true},
		{"createdAt string $nin", `{"createdAt":{"$nin":["2015-06-29T01:39:35.931+00:00"]}}`, "", false},
		{"createdAt string $nin other", `{"createdAt":{"$nin":["2015-06-29T01:39:35Z"]}}`, "", true},
		{"createdAt string against a Date object", `{"createdAt":"2000-01-02T03:04:05Z"}`, `{"createdAt":{"__type":"Date","iso":"2000-01-02T03:04:05.000Z"}}`, true},
		{"dotted createdAt compares text", `{"profile.createdAt":"x"}`, `{"profile":{"createdAt":"x"}}`, true},
		{"iso without zone is UTC", `{"createdAt":{"__type":"Date","iso":"2015-06-29T01:39:35.931"}}`, "", true},
		{"iso without zone or fraction", `{"updatedAt":{"$gte":{"__type":"Date","iso":"2024-03-01T12:00:00"}}}`, "", true},
		{"iso without zone is not local time", `{"updatedAt":{"$gt":{"__type":"Date","iso":"2024-03-01T12:00:00"}}}`, "", false},
	})
}

func TestQueryIn(t *testing.T) {
	runMatch(t, []matchCase{
		{"scalar in", `{"deviceType":{"$in":["android","ios"]}}`, "", true},
		{"scalar not in", `{"deviceType":{"$in":["android"]}}`, "", false},
		{"array any element in", `{"channels":{"$in":["music","news"]}}`, "", true},
		{"array no element in", `{"channels":{"$in":["music"]}}`, "", false},
		{"numbers", `{"badge":{"$in":[1,5]}}`, "", true},
		{"number vs string", `{"badge":{"$in":["5"]}}`, "", false},
		{"empty list", `{"deviceType":{"$in":[]}}`, "", false},
		{"missing field", `{"nosuch":{"$in":["x"]}}`, "", false},
		{"null in list matches missing", `{"nosuch":{"$in":[null]}}`, "", true},
		{"mixed types", `{"valid":{"$in":["x",1,true]}}`, "", true},
		// A nested array is flattened one level, as Parse Server does (transformConstraint).
		{"nested array flattened", `{"channels":{"$in":[["music","news"]]}}`, "", true},
		{"nested array flattened, none in", `{"channels":{"$in":[["music"],"art"]}}`, "", false},
		{"nested array on a scalar", `{"deviceType":{"$in":[["android","ios"]]}}`, "", true},
		{"deeper array stays a value", `{"channels":{"$in":[[["sports","news"]]]}}`, "", true},
		{"deeper array stays a value, differs", `{"channels":{"$in":[[["news"]]]}}`, "", false},
	})
	// A long list goes through the hash sets.
	long := `{"objectId":{"$in":[` + strings.Repeat(`"x",`, 900) + `"o1"]}}`
	runMatch(t, []matchCase{{"long list", long, "", true}})
}

func TestQueryNin(t *testing.T) {
	runMatch(t, []matchCase{
		{"scalar not in", `{"deviceType":{"$nin":["android"]}}`, "", true},
		{"scalar in", `{"deviceType":{"$nin":["ios"]}}`, "", false},
		{"array some element in", `{"channels":{"$nin":["news"]}}`, "", false},
		{"array no element in", `{"channels":{"$nin":["music","art"]}}`, "", true},
		{"missing field", `{"nosuch":{"$nin":["x"]}}`, "", true},
		{"empty list", `{"deviceType":{"$nin":[]}}`, "", true},
		{"nested array flattened", `{"channels":{"$nin":[["music","news"]]}}`, "", false},
		{"nested array flattened, none in", `{"channels":{"$nin":[["music"],["art"]]}}`, "", true},
	})
}

func TestQueryAll(t *testing.T) {
	runMatch(t, []matchCase{
		{"every element present", `{"channels":{"$all":["news","sports"]}}`, "", true},
		{"one missing", `{"channels":{"$all":["news","music"]}}`, "", false},
		{"single", `{"channels":{"$all":["news"]}}`, "", true},
		{"empty list matches nothing", `{"channels":{"$all":[]}}`, "", false},
		// Regex elements (the SDKs' containsAllStartingWith): each must match an element.
		{"regexes every one matches", `{"channels":{"$all":[{"$regex":"^sp"},{"$regex":"^ne"}]}}`, "", true},
		{"regexes one does not match", `{"channels":{"$all":[{"$regex":"^sp"},{"$regex":"^mu"}]}}`, "", false},
		{"regex with options", `{"channels":{"$all":[{"$regex":"^SP","$options":"i"}]}}`, "", true},
		{"regex on a scalar field", `{"deviceType":{"$all":[{"$regex":"^io"}]}}`, "", true},
		{"regex on a missing field", `{"nosuch":{"$all":[{"$regex":""}]}}`, "", false},
		{"regex on numbers", `{"scores":{"$all":[{"$regex":"1"}]}}`, "", false},
		{"scalar field equal", `{"deviceType":{"$all":["ios"]}}`, "", true},
		{"missing field", `{"nosuch":{"$all":["x"]}}`, "", false},
		{"numbers", `{"scores":{"$all":[1,9]}}`, "", true},
	})
}

func TestQueryContainedBy(t *testing.T) {
	runMatch(t, []matchCase{
		{"all elements listed", `{"channels":{"$containedBy":["news","sports","music"]}}`, "", true},
		{"an element not listed", `{"channels":{"$containedBy":["news"]}}`, "", false},
		{"empty array field", `{"empty":{"$containedBy":["x"]}}`, "", true},
		{"scalar listed", `{"deviceType":{"$containedBy":["ios"]}}`, "", true},
		{"missing field", `{"nosuch":{"$containedBy":["x"]}}`, "", false},
	})
}

func TestQueryExists(t *testing.T) {
	runMatch(t, []matchCase{
		{"present", `{"deviceToken":{"$exists":true}}`, "", true},
		{"present but want absent", `{"deviceToken":{"$exists":false}}`, "", false},
		{"absent", `{"nosuch":{"$exists":false}}`, "", true},
		{"absent but want present", `{"nosuch":{"$exists":true}}`, "", false},
		{"null counts as present", `{"vendor":{"$exists":true}}`, "", true},
		{"non-boolean ignored", `{"nosuch":{"$exists":1}}`, "", true},
		{"dotted present", `{"profile.age":{"$exists":true}}`, "", true},
		{"dotted absent", `{"profile.zip":{"$exists":false}}`, "", true},
	})
}

func TestQueryRegex(t *testing.T) {
	runMatch(t, []matchCase{
		{"prefix", `{"timeZone":{"$regex":"^Asia/"}}`, "", true},
		{"no match", `{"timeZone":{"$regex":"^Europe/"}}`, "", false},
		{"case sensitive by default", `{"timeZone":{"$regex":"^asia"}}`, "", false},
		{"option i", `{"timeZone":{"$regex":"^asia","$options":"i"}}`, "", true},
		{"option m", `{"note":{"$regex":"^b$","$options":"m"}}`, `{"note":"a\nb\nc"}`, true},
		{"without m anchors whole", `{"note":{"$regex":"^b$"}}`, `{"note":"a\nb\nc"}`, false},
		{"option s", `{"note":{"$regex":"a.b","$options":"s"}}`, `{"note":"a\nb"}`, true},
		{"without s dot stops at newline", `{"note":{"$regex":"a.b"}}`, `{"note":"a\nb"}`, false},
		{"option x strips space and comments", `{"timeZone":{"$regex":"^Asia / Shang # a comment\n hai$","$options":"x"}}`, "", true},
		{"option x keeps class spaces", `{"note":{"$regex":"^a[ ]b$","$options":"x"}}`, `{"note":"a b"}`, true},
		{"option x escaped space", `{"note":{"$regex":"^a\\ b$","$options":"x"}}`, `{"note":"a b"}`, true},
		{"options combined", `{"note":{"$regex":"^B.C$","$options":"isx"}}`, `{"note":"b\nc"}`, true},
		{"\\Q quoting", `{"note":{"$regex":"^\\Qa.b*(c)\\E$"}}`, `{"note":"a.b*(c)"}`, true},
		{"\\Q quoting is literal", `{"note":{"$regex":"^\\Qa.b\\E$"}}`, `{"note":"axb"}`, false},
		{"\\Q to end", `{"note":{"$regex":"x\\Q[+"}}`, `{"note":"ax[+"}`, true},
		{"\\Q in x mode keeps spaces", `{"note":{"$regex":"^\\Qa b\\E$","$options":"x"}}`, `{"note":"a b"}`, true},
		{"array any element", `{"channels":{"$regex":"^new"}}`, "", true},
		{"non-string field", `{"badge":{"$regex":"5"}}`, "", false},
		{"missing", `{"nosuch":{"$regex":"."}}`, "", false},
		{"unicode", `{"note":{"$regex":"^体育"}}`, `{"note":"体育新闻"}`, true},
	})
}

func TestQuerySize(t *testing.T) {
	runMatch(t, []matchCase{
		{"size 2", `{"channels":{"$size":2}}`, "", true},
		{"size 3", `{"channels":{"$size":3}}`, "", false},
		{"size 0 empty", `{"empty":{"$size":0}}`, "", true},
		{"scalar", `{"deviceType":{"$size":1}}`, "", false},
		{"missing", `{"nosuch":{"$size":0}}`, "", false},
	})
}

func TestQueryLogical(t *testing.T) {
	runMatch(t, []matchCase{
		{"or one holds", `{"$or":[{"deviceType":"android"},{"badge":5}]}`, "", true},
		{"or none holds", `{"$or":[{"deviceType":"android"},{"badge":6}]}`, "", false},
		{"and all hold", `{"$and":[{"deviceType":"ios"},{"badge":5}]}`, "", true},
		{"and one fails", `{"$and":[{"deviceType":"ios"},{"badge":6}]}`, "", false},
		{"nor none holds", `{"$nor":[{"deviceType":"android"},{"badge":6}]}`, "", true},
		{"nor one holds", `{"$nor":[{"deviceType":"android"},{"badge":5}]}`, "", false},
		{"top-level not", `{"$not":{"deviceType":"android"}}`, "", true},
		{"top-level not holds", `{"$not":{"deviceType":"ios"}}`, "", false},
		{"or with field", `{"deviceType":"ios","$or":[{"channels":"x"},{"channels":"news"}]}`, "", true},
		{"nested", `{"$or":[{"$and":[{"badge":{"$gt":1}},{"$nor":[{"valid":false}]}]}]}`, "", true},
		{"empty clause inside or", `{"$or":[{},{"badge":6}]}`, "", true},
		{"implicit and array", `[{"deviceType":"ios"},{"badge":{"$gte":5}}]`, "", true},
		{"implicit and array fails", `[{"deviceType":"ios"},{"badge":{"$gt":5}}]`, "", false},
	})
}

func TestQueryFieldNot(t *testing.T) {
	runMatch(t, []matchCase{
		{"not gt", `{"badge":{"$not":{"$gt":9}}}`, "", true},
		{"not gt fails", `{"badge":{"$not":{"$gt":1}}}`, "", false},
		{"not regex", `{"timeZone":{"$not":{"$regex":"^Europe"}}}`, "", true},
		{"not matches missing", `{"nosuch":{"$not":{"$gt":1}}}`, "", true},
		{"not of range", `{"badge":{"$not":{"$gt":1,"$lt":3}}}`, "", true},
		{"not in array", `{"channels":{"$not":{"$in":["news"]}}}`, "", false},
	})
}

func TestQueryDottedPath(t *testing.T) {
	runMatch(t, []matchCase{
		{"nested equal", `{"profile.name":"Ann"}`, "", true},
		{"nested number", `{"profile.age":{"$gte":18}}`, "", true},
		{"nested array contains", `{"profile.tags":"b"}`, "", true},
		{"nested missing", `{"profile.zip":"x"}`, "", false},
		{"through a scalar", `{"deviceType.x":"x"}`, "", false},
		{"through missing", `{"nosuch.x":{"$exists":false}}`, "", true},
	})
}

func TestQueryPointer(t *testing.T) {
	runMatch(t, []matchCase{
		{"equal", `{"owner":{"__type":"Pointer","className":"_User","objectId":"u1"}}`, "", true},
		{"other id", `{"owner":{"__type":"Pointer","className":"_User","objectId":"u2"}}`, "", false},
		{"other class", `{"owner":{"__type":"Pointer","className":"Team","objectId":"u1"}}`, "", false},
		{"in", `{"owner":{"$in":[{"__type":"Pointer","className":"_User","objectId":"u1"}]}}`, "", true},
		{"array of pointers contains", `{"owners":{"__type":"Pointer","className":"_User","objectId":"u1"}}`,
			`{"owners":[{"__type":"Pointer","className":"_User","objectId":"u0"},{"__type":"Pointer","className":"_User","objectId":"u1"}]}`, true},
	})
}

func TestQueryGeo(t *testing.T) {
	// location is (40, -30). One degree of latitude is about 69 miles / 111 km.
	runMatch(t, []matchCase{
		{"near within miles", `{"location":{"$nearSphere":{"__type":"GeoPoint","latitude":41,"longitude":-30},"$maxDistanceInMiles":70}}`, "", true},
		{"near beyond miles", `{"location":{"$nearSphere":{"__type":"GeoPoint","latitude":41,"longitude":-30},"$maxDistanceInMiles":68}}`, "", false},
		{"near within km", `{"location":{"$nearSphere":{"__type":"GeoPoint","latitude":41,"longitude":-30},"$maxDistanceInKilometers":112}}`, "", true},
		{"near beyond km", `{"location":{"$nearSphere":{"__type":"GeoPoint","latitude":41,"longitude":-30},"$maxDistanceInKilometers":110}}`, "", false},
		{"near radians", `{"location":{"$nearSphere":{"__type":"GeoPoint","latitude":41,"longitude":-30},"$maxDistanceInRadians":0.0176}}`, "", true},
		{"near maxDistance is radians", `{"location":{"$nearSphere":{"__type":"GeoPoint","latitude":41,"longitude":-30},"$maxDistance":0.017}}`, "", false},
		{"near default cap 100 miles inside", `{"location":{"$nearSphere":{"__type":"GeoPoint","latitude":41,"longitude":-30}}}`, "", true},
		{"near default cap 100 miles outside", `{"location":{"$nearSphere":{"__type":"GeoPoint","latitude":42,"longitude":-30}}}`, "", false},
		{"near missing field", `{"nowhere":{"$nearSphere":{"__type":"GeoPoint","latitude":41,"longitude":-30}}}`, "", false},
		{"near non-geo field", `{"badge":{"$nearSphere":{"__type":"GeoPoint","latitude":41,"longitude":-30}}}`, "", false},
		{"box inside", `{"location":{"$within":{"$box":[{"__type":"GeoPoint","latitude":39,"longitude":-31},{"__type":"GeoPoint","latitude":41,"longitude":-29}]}}}`, "", true},
		{"box outside", `{"location":{"$within":{"$box":[{"__type":"GeoPoint","latitude":40.5,"longitude":-31},{"__type":"GeoPoint","latitude":41,"longitude":-29}]}}}`, "", false},
		{"polygon inside", `{"location":{"$geoWithin":{"$polygon":[{"__type":"GeoPoint","latitude":39,"longitude":-31},{"__type":"GeoPoint","latitude":41,"longitude":-31},{"__type":"GeoPoint","latitude":40,"longitude":-28}]}}}`, "", true},
		{"polygon outside", `{"location":{"$geoWithin":{"$polygon":[[-31,41],[-29,41],[-29,42]]}}}`, "", false},
		{"polygon pairs are lng,lat", `{"location":{"$geoWithin":{"$polygon":[[-31,39],[-31,41],[-28,40]]}}}`, "", true},
		{"centerSphere inside", `{"location":{"$geoWithin":{"$centerSphere":[[-30,41],0.0176]}}}`, "", true},
		{"centerSphere outside", `{"location":{"$geoWithin":{"$centerSphere":[{"__type":"GeoPoint","latitude":41,"longitude":-30},0.017]}}}`, "", false},
		{"geopoint equality", `{"location":{"__type":"GeoPoint","latitude":40,"longitude":-30}}`, "", true},
	})
}

func TestQueryParseErrors(t *testing.T) {
	cases := []struct {
		name, where string
		code        push.Code
		msg         string // substring of the message
	}{
		{"malformed JSON", `{"a":`, push.CodeInvalidJSON, "invalid JSON"},
		{"not an object", `"x"`, push.CodeInvalidJSON, "JSON object"},
		{"array of non-objects", `[1]`, push.CodeInvalidJSON, "JSON object"},
		{"unknown operator", `{"a":{"$foo":1}}`, push.CodeInvalidQuery, "$foo"},
		{"unknown top-level operator", `{"$text":{}}`, push.CodeInvalidQuery, "$text"},
		{"bad field name", `{"a-b":1}`, push.CodeInvalidQuery, `"a-b"`},
		{"field starting with digit", `{"1a":1}`, push.CodeInvalidQuery, `"1a"`},
		{"empty dotted segment", `{"a..b":1}`, push.CodeInvalidQuery, `"a..b"`},
		{"mixed operators and keys", `{"a":{"$gt":1,"b":2}}`, push.CodeInvalidQuery, `"b"`},
		{"$in not array", `{"a":{"$in":"x"}}`, push.CodeInvalidQuery, "$in"},
		{"$nin not array", `{"a":{"$nin":1}}`, push.CodeInvalidQuery, "$nin"},
		{"$all not array", `{"a":{"$all":{}}}`, push.CodeInvalidQuery, "$all"},
		{"$gt with array", `{"a":{"$gt":[1]}}`, push.CodeInvalidQuery, "$gt"},
		{"$lt with null", `{"a":{"$lt":null}}`, push.CodeInvalidQuery, "$lt"},
		{"$regex not string", `{"a":{"$regex":1}}`, push.CodeInvalidQuery, "$regex"},
		{"$regex invalid", `{"a":{"$regex":"("}}`, push.CodeInvalidQuery, "$regex"},
		{"$regex backreference", `{"a":{"$regex":"(a)\\1"}}`, push.CodeInvalidQuery, "$regex"},
		{"$options unknown", `{"a":{"$regex":"x","$options":"g"}}`, push.CodeInvalidQuery, "$options"},
		{"$options alone", `{"a":{"$options":"i"}}`, push.CodeInvalidQuery, "$options"},
		{"$size negative", `{"a":{"$size":-1}}`, push.CodeInvalidQuery, "$size"},
		{"$size fraction", `{"a":{"$size":1.5}}`, push.CodeInvalidQuery, "$size"},
		{"$or empty", `{"$or":[]}`, push.CodeInvalidQuery, "$or"},
		{"$nor not array", `{"$nor":{}}`, push.CodeInvalidQuery, "$nor"},
		{"$and of scalars", `{"$and":[1]}`, push.CodeInvalidQuery, "$and"},
		{"$not not object", `{"a":{"$not":1}}`, push.CodeInvalidQuery, "$not"},
		{"operator in value", `{"a":{"$in":[{"$gt":1}]}}`, push.CodeInvalidQuery, "$gt"},
		{"bad date", `{"a":{"__type":"Date","iso":"yesterday"}}`, push.CodeInvalidType, "Date"},
		{"date without time", `{"a":{"__type":"Date","iso":"2020-01-01"}}`, push.CodeInvalidType, "Date"},
		{"date with a bad zone", `{"a":{"__type":"Date","iso":"2020-01-01T00:00:00+0800"}}`, push.CodeInvalidType, "Date"},
		{"date not a string", `{"a":{"__type":"Date","iso":5}}`, push.CodeInvalidType, "Date"},
		{"createdAt not a date", `{"createdAt":"2015"}`, push.CodeInvalidType, "ISO 8601"},
		{"updatedAt $gt not a date", `{"updatedAt":{"$gt":"yesterday"}}`, push.CodeInvalidType, "ISO 8601"},
		{"createdAt $in not a date", `{"createdAt":{"$in":["2015-06-29T01:39:35Z","soon"]}}`, push.CodeInvalidType, "ISO 8601"},
		{"updatedAt $ne not a date", `{"updatedAt":{"$ne":""}}`, push.CodeInvalidType, "ISO 8601"},
		{"createdAt in a sub-query not a date", `{"a":{"$inQuery":{"className":"_Installation","where":{"createdAt":"x"}}}}`, push.CodeInvalidType, "ISO 8601"},
		{"date without iso", `{"a":{"__type":"Date"}}`, push.CodeInvalidType, "Date"},
		{"bad latitude", `{"a":{"__type":"GeoPoint","latitude":91,"longitude":0}}`, push.CodeInvalidType, "latitude"},
		// Decision 9 of the where language: values of types _Installation has no column of
		// are not supported (300), unlike a malformed Date, GeoPoint or Pointer (111).
		{"$all mixing regexes and values", `{"a":{"$all":["x",{"$regex":"^y"}]}}`, push.CodeInvalidQuery, "$regex"},
		{"$all regex not a string", `{"a":{"$all":[{"$regex":1}]}}`, push.CodeInvalidQuery, "$regex"},
		{"$all regex bad pattern", `{"a":{"$all":[{"$regex":"("}]}}`, push.CodeInvalidQuery, "$regex"},
		{"$all regex other key", `{"a":{"$all":[{"$regex":"x","$gt":1}]}}`, push.CodeInvalidQuery, "$gt"},
		{"$in nested over the limit", `{"a":{"$in":[[` + strings.TrimSuffix(strings.Repeat(`1,`, 600), ",") + `],[` + strings.TrimSuffix(strings.Repeat(`2,`, 600), ",") + `]]}}`, push.CodeInvalidQuery, "1000"},
		{"Bytes value", `{"a":{"__type":"Bytes","base64":""}}`, push.CodeInvalidQuery, "Bytes"},
		{"Polygon value", `{"a":{"__type":"Polygon","coordinates":[[0,0],[0,1],[1,0]]}}`, push.CodeInvalidQuery, "Polygon"},
		{"File value", `{"a":{"__type":"File","name":"f.png"}}`, push.CodeInvalidQuery, "File"},
		{"Object value", `{"a":{"__type":"Object","className":"X","objectId":"y"}}`, push.CodeInvalidQuery, "Object"},
		{"Polygon in $in", `{"a":{"$in":[{"__type":"Polygon","coordinates":[]}]}}`, push.CodeInvalidQuery, "Polygon"},
		{"unknown type", `{"a":{"__type":"Foo"}}`, push.CodeInvalidQuery, "Date, GeoPoint, Pointer"},
		{"type not a string", `{"a":{"__type":5}}`, push.CodeInvalidQuery, "__type"},
		{"bad pointer", `{"a":{"__type":"Pointer","objectId":"x"}}`, push.CodeInvalidType, "Pointer"},
		{"maxDistance alone", `{"a":{"$maxDistanceInMiles":1}}`, push.CodeInvalidQuery, "$nearSphere"},
		{"two maxDistances", `{"a":{"$nearSphere":{"__type":"GeoPoint","latitude":1,"longitude":1},"$maxDistance":1,"$maxDistanceInMiles":1}}`, push.CodeInvalidQuery, "both"},
		{"nearSphere not geo", `{"a":{"$nearSphere":[1]}}`, push.CodeInvalidQuery, "$nearSphere"},
		{"box crossing date line", `{"a":{"$within":{"$box":[[170,0],[-170,10]]}}}`, push.CodeInvalidQuery, "date line"},
		{"box one corner", `{"a":{"$within":{"$box":[[0,0]]}}}`, push.CodeInvalidQuery, "$box"},
		{"polygon two points", `{"a":{"$geoWithin":{"$polygon":[[0,0],[1,1]]}}}`, push.CodeInvalidQuery, "$polygon"},
		{"geoWithin unknown shape", `{"a":{"$geoWithin":{"$circle":1}}}`, push.CodeInvalidQuery, "$circle"},
		{"inQuery other class", `{"a":{"$inQuery":{"className":"_User","where":{}}}}`, push.CodeInvalidQuery, "_Installation"},
		{"inQuery missing class", `{"a":{"$inQuery":{"where":{}}}}`, push.CodeInvalidQuery, "className"},
		{"inQuery unknown key", `{"a":{"$inQuery":{"className":"_Installation","order":"x"}}}`, push.CodeInvalidQuery, "order"},
		{"inQuery bad limit", `{"a":{"$inQuery":{"className":"_Installation","limit":5000}}}`, push.CodeInvalidQuery, "limit"},
		{"select without key", `{"a":{"$select":{"query":{"className":"_Installation"}}}}`, push.CodeInvalidQuery, "key"},
		{"select other class", `{"a":{"$select":{"query":{"className":"Post"},"key":"b"}}}`, push.CodeInvalidQuery, "_Installation"},
		{"bad subquery where", `{"a":{"$inQuery":{"className":"_Installation","where":{"b":{"$bad":1}}}}}`, push.CodeInvalidQuery, "$bad"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := Parse(json.RawMessage(c.where))
			if err == nil {
				t.Fatalf("Parse(%s): got query %v, want error code %d", c.where, q, c.code)
			}
			var pe *push.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%s): got %T %v, want *push.Error", c.where, err, err)
			}
			if pe.Code != c.code || !strings.Contains(pe.Message, c.msg) {
				t.Errorf("Parse(%s): got code %d %q, want code %d containing %q", c.where, pe.Code, pe.Message, c.code, c.msg)
			}
		})
	}
}

func TestQueryLimits(t *testing.T) {
	nest := func(n int) string {
		return strings.Repeat(`{"$or":[`, n) + `{"a":1}` + strings.Repeat(`]}`, n)
	}
	list := func(n int) string {
		return `{"a":{"$in":[` + strings.TrimSuffix(strings.Repeat(`1,`, n), ",") + `]}}`
	}
	conds := func(n int) string {
		var b strings.Builder
		b.WriteString(`{`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"f` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `_` + itoa(i) + `":1`)
		}
		b.WriteString(`}`)
		return b.String()
	}
	sub := `{"a":{"$inQuery":{"className":"_Installation"}}}`
	subs := func(n int) string {
		return `[` + strings.TrimSuffix(strings.Repeat(sub+",", n), ",") + `]`
	}
	cases := []struct {
		name, where string
		ok          bool
		msg         string
	}{
		{"depth at limit", nest(MaxDepth), true, ""},
		{"depth over limit", nest(MaxDepth + 1), false, "deeper"},
		{"raw JSON depth", strings.Repeat(`[`, MaxJSONDepth+1) + strings.Repeat(`]`, MaxJSONDepth+1), false, "JSON deeper"},
		{"list at limit", list(MaxListLen), true, ""},
		{"list over limit", list(MaxListLen + 1), false, "1001 values"},
		{"conditions at limit", conds(MaxConditions), true, ""},
		{"conditions over limit", conds(MaxConditions + 1), false, "conditions"},
		{"size over limit", `{"a":"` + strings.Repeat("x", MaxQueryBytes) + `"}`, false, "bytes"},
		{"subqueries at limit", subs(MaxSubqueries), true, ""},
		{"subqueries over limit", subs(MaxSubqueries + 1), false, "sub-queries"},
		{"regex too long", `{"a":{"$regex":"` + strings.Repeat("a", MaxRegexLen+1) + `"}}`, false, "longer"},
		{"field name too long", `{"` + strings.Repeat("a", 200) + `":1}`, false, "longer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(json.RawMessage(c.where))
			if c.ok {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			var pe *push.Error
			if !errors.As(err, &pe) || pe.Code != push.CodeInvalidQuery || !strings.Contains(pe.Message, c.msg) {
				t.Fatalf("got %v, want code 300 containing %q", err, c.msg)
			}
		})
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestQueryFields(t *testing.T) {
	cases := []struct {
		name, where string
		want        []string
	}{
		{"empty", `{}`, []string{}},
		{"plain", `{"deviceType":"ios","badge":{"$gt":1}}`, []string{"badge", "deviceType"}},
		{"logical", `{"$or":[{"a":1},{"$nor":[{"b":1}]}],"$not":{"c":1},"$and":[{"d":1}]}`, []string{"a", "b", "c", "d"}},
		{"dotted gives top", `{"profile.age":1,"profile.name":"x"}`, []string{"profile"}},
		{"subquery fields excluded", `{"owner":{"$inQuery":{"className":"_Installation","where":{"secret":1}}}}`, []string{"owner"}},
		{"implicit and", `[{"x":1},{"y":2}]`, []string{"x", "y"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := Parse(json.RawMessage(c.where))
			if err != nil {
				t.Fatal(err)
			}
			got := q.Fields()
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("Fields(%s): got %v, want %v", c.where, got, c.want)
			}
		})
	}
}

func TestQueryErrorsAreClientSafe(t *testing.T) {
	// A huge hostile string is clipped in the message.
	_, err := Parse(json.RawMessage(`{"` + strings.Repeat("x", 100) + `-":1}`))
	var pe *push.Error
	if !errors.As(err, &pe) || len(pe.Message) > 300 {
		t.Fatalf("got %v, want a short *push.Error", err)
	}
}

// TestQueryRouteDocValues covers documents built from compact rows: []string channels,
// int64 numbers and time.Time dates, as a Doc over push.Route may return them.
func TestQueryRouteDocValues(t *testing.T) {
	d := MapDoc{
		"channels":  []string{"sports", "news"},
		"updatedAt": time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC),
		"badge":     int64(5),
	}
	cases := []struct {
		name, where string
		want        bool
	}{
		{"contains", `{"channels":"news"}`, true},
		{"not contains", `{"channels":"music"}`, false},
		{"exact array", `{"channels":["sports","news"]}`, true},
		{"exact array differs", `{"channels":["news","sports"]}`, false},
		{"ne", `{"channels":{"$ne":"news"}}`, false},
		{"in", `{"channels":{"$in":["x","sports"]}}`, true},
		{"nin", `{"channels":{"$nin":["x","sports"]}}`, false},
		{"all", `{"channels":{"$all":["news","sports"]}}`, true},
		{"containedBy", `{"channels":{"$containedBy":["news","sports","x"]}}`, true},
		{"size", `{"channels":{"$size":2}}`, true},
		{"regex", `{"channels":{"$regex":"^spo"}}`, true},
		{"gt string element", `{"channels":{"$gt":"s"}}`, true},
		{"time.Time date", `{"updatedAt":{"$gte":{"__type":"Date","iso":"2024-03-01T12:00:00Z"}}}`, true},
		{"int64 number", `{"badge":{"$in":[5]}}`, true},
		{"int64 compare", `{"badge":{"$lt":5}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := Parse(json.RawMessage(c.where))
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Match(d); got != c.want {
				t.Errorf("Match(%s): got %v, want %v", c.where, got, c.want)
			}
		})
	}
}

// TestQueryMatchConcurrent runs one resolved query from several goroutines (under -race).
func TestQueryMatchConcurrent(t *testing.T) {
	q, err := Parse(json.RawMessage(`{"timeZone":{"$regex":"^asia","$options":"i"},"channels":{"$in":["news"]},"team":{"$select":{"query":{"className":"_Installation"},"key":"team"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := &scanner{docs: []MapDoc{{"objectId": "a", "team": "red"}}}
	if err := q.Resolve(t.Context(), s.run); err != nil {
		t.Fatal(err)
	}
	d := doc(t, install)
	d["team"] = "red"
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				if !q.Match(d) {
					t.Error("Match: got false, want true")
					return
				}
				_ = q.Hints()
			}
		})
	}
	wg.Wait()
}

func TestQueryMatchesAll(t *testing.T) {
	cases := []struct {
		where string
		want  bool
	}{
		{``, true}, {`null`, true}, {`{}`, true}, {`[]`, true}, {`[{}]`, true}, {`[{},{}]`, true},
		{`{"$and":[{}]}`, true},
		{`{"$or":[{},{"a":1}]}`, true},
		{`{"a":{"$exists":"yes"}}`, true}, // a non-boolean $exists is ignored
		{`{"$nor":[{}]}`, false},
		{`{"$not":{}}`, false},
		{`{"$and":[{"$nor":[{}]}]}`, false},
		{`[{},{"$not":{}}]`, false},
		{`{"a":1}`, false},
		{`{"$or":[{"a":1},{"b":1}]}`, false},
		{`{"a":{"$exists":true}}`, false},
	}
	docs := []MapDoc{{}, {"a": 1.0, "b": 1.0}}
	for _, c := range cases {
		q, err := Parse(json.RawMessage(c.where))
		if err != nil {
			t.Fatalf("Parse(%s): %v", c.where, err)
		}
		if got := q.MatchesAll(); got != c.want {
			t.Errorf("MatchesAll(%s): got %v, want %v", c.where, got, c.want)
		}
		for _, d := range docs {
			if q.MatchesAll() && !q.Match(d) {
				t.Errorf("MatchesAll(%s) but Match(%v) is false", c.where, d)
			}
		}
	}
	var nilQuery *Query
	if !nilQuery.MatchesAll() {
		t.Errorf("nil query: MatchesAll false, want true")
	}
	// An $or with an empty branch matches everything, but only once its sub-query ran.
	q, err := Parse(json.RawMessage(`{"$or":[{},{"a":{"$inQuery":{"className":"_Installation","where":{}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.MatchesAll() || q.Match(MapDoc{}) {
		t.Errorf("before Resolve: MatchesAll %v, Match %v; want false, false", q.MatchesAll(), q.Match(MapDoc{}))
	}
	if err := q.Resolve(context.Background(), (&scanner{}).run); err != nil {
		t.Fatal(err)
	}
	if !q.MatchesAll() || !q.Match(MapDoc{}) {
		t.Errorf("after Resolve: MatchesAll %v, Match %v; want true, true", q.MatchesAll(), q.Match(MapDoc{}))
	}
}

// A dotted path goes on into every object of an array, as Mongo (and so Parse) does.
func TestQueryDottedPathThroughArrays(t *testing.T) {
	const doc = `{"trips":[{"city":"Paris","days":3,"tags":["art","food"]},{"city":"Rome","days":5},"not an object"],` +
		`"profile":{"pets":[{"kind":"cat","vet":{"name":"Ada"}}]}}`
	runMatch(t, []matchCase{
		{"any element equal", `{"trips.city":"Rome"}`, doc, true},
		{"no element equal", `{"trips.city":"Oslo"}`, doc, false},
		{"comparison on any element", `{"trips.days":{"$gt":4}}`, doc, true},
		{"$in over the elements", `{"trips.city":{"$in":["Oslo","Paris"]}}`, doc, true},
		{"arrays found are flattened", `{"trips.tags":"food"}`, doc, true},
		{"$all across elements", `{"trips.city":{"$all":["Paris","Rome"]}}`, doc, true},
		{"exists in some element", `{"trips.days":{"$exists":true}}`, doc, true},
		{"in no element", `{"trips.zip":{"$exists":false}}`, doc, true},
		{"deeper, through a nested object", `{"profile.pets.vet.name":"Ada"}`, doc, true},
		{"$ne means no element equals", `{"trips.city":{"$ne":"Rome"}}`, doc, false},
	})
}

func TestQueryFieldValue(t *testing.T) {
	d := map[string]any(doc(t, `{"a":{"b":1},"trips":[{"city":"Rome"},{"x":1},{"city":["Oslo","Bern"]},7],"n":null}`))
	for _, c := range []struct {
		field string
		want  any
		ok    bool
	}{
		{"a", map[string]any{"b": float64(1)}, true},
		{"a.b", float64(1), true},
		{"a.c", nil, false},
		{"trips.city", []any{"Rome", "Oslo", "Bern"}, true},
		{"trips.y", nil, false},
		{"n", nil, true},
		{"n.x", nil, false},
		{"missing", nil, false},
	} {
		got, ok := FieldValue(d, c.field)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("FieldValue(%q) = %v, %v; want %v, %v", c.field, got, ok, c.want, c.ok)
		}
	}
}
