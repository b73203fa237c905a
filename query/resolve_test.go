package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// scanner runs sub-queries over a fixed set of installations, as the store does.
type scanner struct {
	docs []MapDoc
	runs int
}

func (s *scanner) run(ctx context.Context, sub *Query, visit func(Doc) error) error {
	s.runs++
	if sub.NeedsResolve() {
		return errors.New("sub-query handed over unresolved")
	}
	for _, d := range s.docs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if sub.Match(d) {
			if err := visit(d); err != nil {
				return fmt.Errorf("cannot visit: %w", err)
			}
		}
	}
	return nil
}

func ptr(id string) map[string]any {
	return map[string]any{"__type": "Pointer", "className": "_Installation", "objectId": id}
}

func TestQueryResolve(t *testing.T) {
	installs := &scanner{docs: []MapDoc{
		{"objectId": "a", "deviceType": "ios", "channels": []any{"vip"}, "team": "red"},
		{"objectId": "b", "deviceType": "android", "channels": []any{"vip"}, "team": "blue"},
		{"objectId": "c", "deviceType": "ios", "channels": []any{}, "team": "green"},
	}}
	docs := map[string]MapDoc{
		"refA":   {"objectId": "x1", "peer": ptr("a"), "team": "red"},
		"refB":   {"objectId": "x2", "peer": ptr("b"), "team": "blue"},
		"refC":   {"objectId": "x3", "peer": ptr("c"), "team": "green"},
		"refs":   {"objectId": "x4", "peer": []any{ptr("z"), ptr("b")}, "team": "none"},
		"noPeer": {"objectId": "x5", "team": "red"},
		"user":   {"objectId": "x6", "peer": map[string]any{"__type": "Pointer", "className": "_User", "objectId": "a"}},
	}
	cases := []struct {
		name, where string
		want        []string // names of docs that match
	}{
		{"inQuery", `{"peer":{"$inQuery":{"className":"_Installation","where":{"channels":"vip"}}}}`, []string{"refA", "refB", "refs"}},
		{"notInQuery", `{"peer":{"$notInQuery":{"className":"_Installation","where":{"channels":"vip"}}}}`, []string{"noPeer", "refC", "user"}},
		{"select", `{"team":{"$select":{"query":{"className":"_Installation","where":{"deviceType":"ios"}},"key":"team"}}}`, []string{"noPeer", "refA", "refC"}},
		{"dontSelect", `{"team":{"$dontSelect":{"query":{"className":"_Installation","where":{"deviceType":"ios"}},"key":"team"}}}`, []string{"refB", "refs", "user"}},
		{"inQuery limit", `{"peer":{"$inQuery":{"className":"_Installation","limit":1}}}`, []string{"refA"}},
		{"nested sub-query", `{"peer":{"$inQuery":{"className":"_Installation","where":{"team":{"$select":{"query":{"className":"_Installation","where":{"objectId":"b"}},"key":"team"}}}}}}`, []string{"refB", "refs"}},
		{"inQuery under or", `{"$or":[{"team":"green"},{"peer":{"$inQuery":{"className":"_Installation","where":{"objectId":"a"}}}}]}`, []string{"refA", "refC"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := Parse(json.RawMessage(c.where))
			if err != nil {
				t.Fatal(err)
			}
			if !q.NeedsResolve() {
				t.Fatalf("NeedsResolve: got false, want true")
			}
			for name, d := range docs {
				if q.Match(d) {
					t.Fatalf("Match before Resolve of %s: got true, want false", name)
				}
			}
			if err := q.Resolve(context.Background(), installs.run); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if q.NeedsResolve() {
				t.Fatalf("NeedsResolve after Resolve: got true, want false")
			}
			var got []string
			for _, name := range sortedKeysOf(docs) {
				if q.Match(docs[name]) {
					got = append(got, name)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("matches: got %v, want %v", got, c.want)
			}
			runs := installs.runs
			if err := q.Resolve(context.Background(), installs.run); err != nil || installs.runs != runs {
				t.Errorf("second Resolve: got err %v and %d new runs, want nil and 0", err, installs.runs-runs)
			}
		})
	}
}

func sortedKeysOf(m map[string]MapDoc) []string {
	x := make(map[string]any, len(m))
	for k := range m {
		x[k] = nil
	}
	return sortedKeys(x)
}

func TestQueryResolveCapsResults(t *testing.T) {
	s := &scanner{}
	for i := range MaxSubqueryResults + 500 {
		s.docs = append(s.docs, MapDoc{"objectId": fmt.Sprintf("id%04d", i)})
	}
	q, err := Parse(json.RawMessage(`{"objectId":{"$select":{"query":{"className":"_Installation","where":{}},"key":"objectId"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Resolve(context.Background(), s.run); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range s.docs {
		if q.Match(d) {
			n++
		}
	}
	if n != MaxSubqueryResults {
		t.Errorf("matches: got %d, want %d", n, MaxSubqueryResults)
	}
	if h := q.Hints(); len(h.ObjectIDs) != MaxSubqueryResults {
		t.Errorf("hints after Resolve: got %d object ids, want %d", len(h.ObjectIDs), MaxSubqueryResults)
	}
}

func TestQueryResolveErrors(t *testing.T) {
	q, err := Parse(json.RawMessage(`{"peer":{"$inQuery":{"className":"_Installation"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("store down")
	err = q.Resolve(context.Background(), func(context.Context, *Query, func(Doc) error) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Resolve: got %v, want wrapping %v", err, boom)
	}
	if !q.NeedsResolve() {
		t.Fatalf("NeedsResolve after failed Resolve: got false, want true")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	cancel()
	s := &scanner{docs: []MapDoc{{"objectId": "a"}}}
	if err := q.Resolve(ctx, s.run); !errors.Is(err, context.Canceled) {
		t.Fatalf("Resolve with cancelled ctx: got %v, want context.Canceled", err)
	}
	if err := q.Resolve(context.Background(), nil); err == nil {
		t.Fatalf("Resolve with nil runner: got nil error")
	}
	plain, _ := Parse(json.RawMessage(`{"a":1}`))
	if err := plain.Resolve(context.Background(), nil); err != nil || plain.NeedsResolve() {
		t.Fatalf("Resolve of a plain query: got %v, NeedsResolve %v", err, plain.NeedsResolve())
	}
}

func TestQueryCompare(t *testing.T) {
	date := func(iso string) map[string]any { return map[string]any{"__type": "Date", "iso": iso} }
	// Each value is strictly below the next one.
	ordered := []any{
		nil,
		-1.5, 0.0, 2.0, json.Number("3"), 10,
		"", "a", "b", "ba",
		map[string]any{"x": 1.0},
		map[string]any{"__type": "Pointer", "className": "_Installation", "objectId": "a"},
		map[string]any{"__type": "Pointer", "className": "_Installation", "objectId": "b"},
		[]any{}, []any{1.0}, []any{1.0, 2.0}, []any{2.0},
		false, true,
		date("2000-01-01T00:00:00Z"), time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC), date("2002-01-01T00:00:00Z"),
	}
	for i := range ordered {
		for j := range ordered {
			want := cmpInt(i, j)
			if got := Compare(ordered[i], ordered[j]); got != want {
				t.Errorf("Compare(%v, %v): got %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
	ties := [][2]any{
		{2.0, 2}, {map[string]any{"a": 1.0}, map[string]any{"b": 2.0}},
		{date("2000-01-01T08:00:00+08:00"), date("2000-01-01T00:00:00Z")},
	}
	for _, c := range ties {
		if got := Compare(c[0], c[1]); got != 0 {
			t.Errorf("Compare(%v, %v): got %d, want 0", c[0], c[1], got)
		}
	}
}

func TestQueryParseISO(t *testing.T) {
	cases := []struct {
		in   string
		want string // RFC3339Nano in UTC, "" for invalid
	}{
		{"2015-06-29T01:39:35.931Z", "2015-06-29T01:39:35.931Z"},
		{"2015-06-29T01:39:35Z", "2015-06-29T01:39:35Z"},
		{"2015-06-29T01:39:35.123456789Z", "2015-06-29T01:39:35.123456789Z"},
		{"2015-06-29T09:39:35+08:00", "2015-06-29T01:39:35Z"},
		{"2015-06-28T21:39:35-04:00", "2015-06-29T01:39:35Z"},
		{"2016-02-29T00:00:00Z", "2016-02-29T00:00:00Z"},
		{"2015-02-29T00:00:00Z", ""},
		{"2015-13-01T00:00:00Z", ""},
		{"2015-06-29T24:00:00Z", ""},
		{"2015-06-29T01:39:35", "2015-06-29T01:39:35Z"},
		{"2015-06-29T01:39:35.5", "2015-06-29T01:39:35.5Z"},
		{"2015-06-29T01:39:35.123456789", "2015-06-29T01:39:35.123456789Z"},
		{"2015-06-29T01:39:3", ""},
		{"2015-06-29T01:39:35.", ""},
		{"2015-06-29T01:39:35 ", ""},
		{"2015-06-29T01:39:35.5x", ""},
		{"2015-06-29T01:39:35+08", ""},
		{"2015-06-29", ""},
		{"2015-06-29T01:39:35.Z", ""},
		{"2015-06-29 01:39:35Z", ""},
		{"2015-06-29T01:39:35+0800", ""},
		{"2015-06-29T01:39:35.1234567890Z", ""},
		{"yesterday", ""},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			tm, ok := parseISO(c.in)
			got := ""
			if ok {
				got = tm.UTC().Format(time.RFC3339Nano)
			}
			if got != c.want {
				t.Errorf("parseISO(%q): got %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// TestQueryResolveExclusionNeverTruncated: a sub-query whose results exclude installations
// ($notInQuery, $dontSelect, or $inQuery/$select under $nor/$not) may not be cut at the cap:
// excluding only some of its results would match installations the query excludes. It is an
// error 300 instead. Where the cut only loses matches, the cap still applies silently.
func TestQueryResolveExclusionNeverTruncated(t *testing.T) {
	s := &scanner{}
	for i := range MaxSubqueryResults + 1 {
		s.docs = append(s.docs, MapDoc{"objectId": fmt.Sprintf("id%04d", i), "tag": fmt.Sprintf("t%04d", i), "peer": ptr(fmt.Sprintf("id%04d", i))})
	}
	small := &scanner{docs: s.docs[:MaxSubqueryResults]}
	const (
		inQ  = `{"$inQuery":{"className":"_Installation","where":{}}}`
		sel  = `{"$select":{"query":{"className":"_Installation","where":{}},"key":"tag"}}`
		ninQ = `{"$notInQuery":{"className":"_Installation","where":{}}}`
		dsel = `{"$dontSelect":{"query":{"className":"_Installation","where":{}},"key":"tag"}}`
	)
	refused := []string{
		`{"peer":` + ninQ + `}`,
		`{"tag":` + dsel + `}`,
		`{"$nor":[{"peer":` + inQ + `}]}`,
		`{"$not":{"tag":` + sel + `}}`,
		`{"tag":{"$not":` + sel + `}}`,
		`{"$or":[{"a":1},{"$nor":[{"tag":` + sel + `}]}]}`,
		// The outer sub-query is fine to cut, but its inner one excludes.
		`{"peer":{"$inQuery":{"className":"_Installation","where":{"tag":` + dsel + `}}}}`,
		// Under a $notInQuery, a positive inner sub-query decides what is excluded.
		`{"peer":{"$notInQuery":{"className":"_Installation","where":{"tag":` + sel + `}}}}`,
	}
	for _, where := range refused {
		t.Run(where, func(t *testing.T) {
			q, err := Parse(json.RawMessage(where))
			if err != nil {
				t.Fatal(err)
			}
			err = q.Resolve(context.Background(), s.run)
			var pe *push.Error
			if !errors.As(err, &pe) || pe.Code != push.CodeInvalidQuery || !strings.Contains(pe.Message, "more than 1000") || !strings.Contains(pe.Message, "narrow") {
				t.Fatalf("Resolve over %d results: got %v, want error 300 saying more than 1000 and narrow", len(s.docs), err)
			}
			if !q.NeedsResolve() {
				t.Fatalf("NeedsResolve after a refused Resolve: got false, want true")
			}
			// Exactly the cap is complete, so it is fine.
			q, _ = Parse(json.RawMessage(where))
			if err := q.Resolve(context.Background(), small.run); err != nil {
				t.Fatalf("Resolve over %d results: %v", len(small.docs), err)
			}
		})
	}
	allowed := []string{
		`{"peer":` + inQ + `}`,
		`{"tag":` + sel + `}`,
		`{"$nor":[{"peer":` + ninQ + `}]}`,
		`{"tag":{"$not":` + dsel + `}}`,
		// An explicit limit asks for the first results.
		`{"peer":{"$notInQuery":{"className":"_Installation","where":{},"limit":10}}}`,
	}
	for _, where := range allowed {
		t.Run(where, func(t *testing.T) {
			q, err := Parse(json.RawMessage(where))
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Resolve(context.Background(), s.run); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
		})
	}
}
