package query

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/pushd/pushd/push"
)

// fuzzDocs cover every value shape a stored document holds.
var fuzzDocs = []string{
	install,
	`{}`,
	`{"objectId":"a","deviceType":"android","channels":[],"badge":null}`,
	`{"a":[1,"x",true,null,{"b":[]},[2]],"b":{"c":{"d":1}},"c":"2015-06-29T01:39:35.931Z"}`,
	`{"peer":{"__type":"Pointer","className":"_Installation","objectId":"a"},"d":{"__type":"Date","iso":"bad"},"g":{"__type":"GeoPoint","latitude":"x"}}`,
}

var fuzzSeeds = []string{
	`{"updatedAt":{"$gt":{"$relativeTime":"1 yr 2 wks 3 days ago"},"$lte":{"$relativeTime":"in 5 mins"}}}`,
	`{"deviceType":"ios","channels":"sports","badge":{"$gt":3}}`,
	`{"channels":{"$all":["a","b"]},"deviceType":{"$in":["ios","android"]}}`,
	`{"objectId":{"$in":["a","b"]},"valid":{"$ne":false}}`,
	`[{"deviceType":"ios"},{"badge":{"$lte":5}}]`,
	`{"$or":[{"a":1},{"b":{"$exists":false}}],"$nor":[{"c":{"$size":2}}],"$not":{"d":null}}`,
	`{"createdAt":{"$gte":{"__type":"Date","iso":"2015-06-29T01:39:35.931Z"}}}`,
	`{"t":{"$regex":"^\\Qa.b\\E x # c\n","$options":"imsx"}}`,
	`{"t":{"$not":{"$regex":"[[:alpha:]]+"}},"u":{"$containedBy":[1,"x"]}}`,
	`{"loc":{"$nearSphere":{"__type":"GeoPoint","latitude":1,"longitude":2},"$maxDistanceInMiles":10}}`,
	`{"loc":{"$within":{"$box":[[0,0],[1,1]]}},"l2":{"$geoWithin":{"$polygon":[[0,0],[0,1],[1,0]]}}}`,
	`{"loc":{"$geoWithin":{"$centerSphere":[[0,0],0.1]}}}`,
	`{"peer":{"$inQuery":{"className":"_Installation","where":{"deviceType":"ios"}}}}`,
	`{"team":{"$select":{"query":{"className":"_Installation","where":{}},"key":"team"}}}`,
	`{"owner":{"__type":"Pointer","className":"_User","objectId":"u1"},"p.q":{"$eq":[1,{"a":2}]}}`,
	`{"a":{"$in":[{"__type":"Date","iso":"2000-01-01T00:00:00Z"},null,1,"s",[1]]}}`,
	`{"a":{"$exists":1},"b":{"$nin":[]}}`,
	`{"c":{"$in":[["a","b"],"c",[["d"]]]},"d":{"$all":[{"$regex":"^a","$options":"i"},{"$regex":"b"}]}}`,
	`{"createdAt":"2020-01-01T00:00:00","updatedAt":{"$gt":"2020-01-01T00:00:00.5+08:00","$in":["2021-01-01T00:00:00Z"]}}`,
	`{"peer":{"$notInQuery":{"className":"_Installation","where":{"t":{"$select":{"query":{"className":"_Installation"},"key":"t"}}}}}}`,
	`{"$nor":[{}],"$not":{"a":{"$not":{"$dontSelect":{"query":{"className":"_Installation","where":{}},"key":"a"}}}}}`,
	`{"a":{"$bad":1}}`, `{"a":`, `"x"`, `null`, `{}`, `[]`,
}

// FuzzQueryParse checks that Parse never panics and reports only *push.Error, and that a
// parsed query's Match, Hints, Fields and Resolve never panic.
func FuzzQueryParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
		f.Add([]byte(s[:len(s)/2])) // split at an odd point
	}
	docs := make([]MapDoc, len(fuzzDocs))
	for i, s := range fuzzDocs {
		docs[i] = doc(f, s)
	}
	f.Fuzz(func(t *testing.T, where []byte) {
		q, err := Parse(where)
		if err != nil {
			var pe *push.Error
			if !errors.As(err, &pe) || pe.Message == "" {
				t.Fatalf("Parse(%q): got %T %v, want *push.Error", where, err, err)
			}
			if q != nil {
				t.Fatalf("Parse(%q): got a query with the error", where)
			}
			return
		}
		for _, d := range docs {
			q.Match(d)
		}
		q.Match(nil)
		_ = q.Hints()
		_ = q.Fields()
		if q.MatchesAll() {
			for _, d := range docs {
				if !q.Match(d) {
					t.Fatalf("Parse(%q): MatchesAll, but Match(%v) is false", where, d)
				}
			}
		}
		if q.NeedsResolve() {
			s := &scanner{docs: docs}
			if err := q.Resolve(context.Background(), s.run); err != nil {
				t.Fatalf("Resolve(%q): %v", where, err)
			}
			for _, d := range docs {
				q.Match(d)
			}
			_ = q.Hints()
		}
		// A query re-parsed from its own accepted text parses again.
		if _, err := Parse(json.RawMessage(where)); err != nil {
			t.Fatalf("second Parse(%q): %v", where, err)
		}
	})
}
