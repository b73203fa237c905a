package fanout

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
)

// The route doc must answer every field exactly as the decoded document does.
func TestFanoutRouteDocMatchesDecodedDoc(t *testing.T) {
	doc := []byte(`{ "objectId":"o1","deviceType":"ios","deviceToken":"ab","channels":["a","b"],` +
		`"age":41.5,"neg":-3,"ok":true,"no":false,"nil":null,"nested":{"x":[1,{"y":"}"}]},"s\"q":"v",` +
		`"esc":"a\"b\u00e9","k\u0065y":"unicode key","arr":[ "x" , 2 ],"updatedAt":"2024-05-01T10:00:00.000Z"}`)
	r := push.Route{ObjectID: "o1", DeviceType: "ios", DeviceToken: "ab", Channels: []string{"a", "b"}}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	var d rowDoc
	d.reset(&r, doc)
	for _, f := range []string{"objectId", "deviceType", "deviceToken", "channels", "age", "neg", "ok", "no", "nil",
		"nested", `s"q`, "esc", "key", "arr", "missing", "installationId", "updatedAt"} {
		got, gok := d.Get(f)
		want, wok := m[f]
		if gok != wok || !reflect.DeepEqual(got, want) {
			t.Errorf("Get(%q) = %#v, %v; want %#v, %v", f, got, gok, want, wok)
		}
	}
}

// Empty routing values are told from absent ones by the document, as the listing (which
// decodes it) tells them: channels [] has size 0 and exists; vendor "" equals "".
func TestFanoutRouteDocEmptyRoutingValues(t *testing.T) {
	r := push.Route{ObjectID: "o1", DeviceType: "android", InstallationID: "i1"}
	for _, doc := range []string{
		`{"objectId":"o1","deviceType":"android","installationId":"i1","channels":[],"vendor":"","deviceProfile":""}`,
		`{"objectId":"o1","deviceType":"android","installationId":"i1"}`,
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		for _, where := range []string{
			`{"channels":{"$size":0}}`, `{"channels":[]}`, `{"channels":{"$exists":false}}`,
			`{"vendor":""}`, `{"vendor":{"$exists":true}}`, `{"deviceProfile":{"$in":["",null]}}`,
			`{"registrationId":{"$exists":false}}`,
		} {
			q, err := query.Parse(json.RawMessage(where))
			if err != nil {
				t.Fatal(err)
			}
			var d rowDoc
			d.reset(&r, []byte(doc))
			if got, want := q.Match(&d), q.Match(query.MapDoc(m)); got != want {
				t.Errorf("doc %s, where %s: route doc %v, decoded doc %v", doc, where, got, want)
			}
		}
	}
}

func TestFanoutRouteDocWithQueries(t *testing.T) {
	r := push.Route{ObjectID: "o1", DeviceType: "android", InstallationID: "i1", Channels: []string{"news", "sports"}}
	doc := []byte(`{"objectId":"o1","deviceType":"android","installationId":"i1","channels":["news","sports"],"age":30,"lang":"fr"}`)
	for _, c := range []struct {
		where string
		want  bool
	}{
		{`{"channels":"news","age":{"$gt":20},"lang":{"$in":["fr","de"]}}`, true},
		{`{"channels":{"$all":["news","sports"]},"lang":"en"}`, false},
		{`{"deviceToken":{"$exists":false},"age":{"$lte":30}}`, true},
		{`{"$or":[{"age":1},{"lang":"fr"}]}`, true},
		{`{"lang":{"$regex":"^f"},"installationId":"i1"}`, true},
	} {
		q, err := query.Parse(json.RawMessage(c.where))
		if err != nil {
			t.Fatal(err)
		}
		var d rowDoc
		d.reset(&r, doc)
		if got := q.Match(&d); got != c.want {
			t.Errorf("%s: %v, want %v", c.where, got, c.want)
		}
	}
}

func TestFanoutTopFieldMalformed(t *testing.T) {
	for _, doc := range []string{``, `[]`, `{"a":`, `{"a" 1}`, `{"a":"x`, `{"b":1,"a"`, `{"b":[1,}`, `nope`} {
		if v, ok := topField([]byte(doc), "a"); ok {
			t.Errorf("topField(%q) = %q, want absent", doc, v)
		}
	}
}

func FuzzFanoutTopField(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":"x","c":{"a":2},"d":[1,"a"]}`), "a")
	f.Add([]byte(`{"k\u0065y":"v"}`), "key")
	f.Add([]byte(` { "a" : [ {"b":"]"} ] } `), "a")
	f.Fuzz(func(t *testing.T, doc []byte, field string) {
		var m map[string]any
		if json.Unmarshal(doc, &m) != nil {
			var d rowDoc
			d.raw = doc
			_, _ = d.docField(field) // must not panic
			return
		}
		// Stored documents are valid UTF-8 (api/jsondoc writes U+FFFD for an invalid byte), and
		// so are the where's field names (encoding/json does the same): encoding/json would
		// compare a key it rewrote with a field it did not.
		if !utf8.Valid(doc) || !utf8.ValidString(field) {
			return
		}
		var d rowDoc
		d.raw = doc
		got, gok := d.docField(field)
		want, wok := m[field]
		// encoding/json keeps the last of duplicate keys; topField the first.
		if dupKey(doc, field) {
			return
		}
		if gok != wok || !reflect.DeepEqual(got, want) {
			t.Errorf("docField(%q, %q) = %#v, %v; want %#v, %v", doc, field, got, gok, want, wok)
		}
	})
}

func dupKey(doc []byte, field string) bool {
	dec := json.NewDecoder(bytesReader(doc))
	if _, err := dec.Token(); err != nil {
		return false
	}
	seen := 0
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		if k == field {
			seen++
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
	}
	return seen > 1
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
