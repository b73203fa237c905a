package query

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/push"
)

// Limits; the package doc says why each has its value.
const (
	MaxQueryBytes      = 64 << 10
	MaxDepth           = 16
	MaxJSONDepth       = 64
	MaxListLen         = 1000
	MaxConditions      = 256
	MaxSubqueries      = 8
	MaxSubqueryResults = 1000
	MaxRegexLen        = 1024
)

// Doc is one document a query is evaluated against. Values are what encoding/json decodes
// into any: string, float64, bool, nil, []any, map[string]any. For documents built from
// compact rows without decoding JSON, []string (e.g. channels), int64 and time.Time
// (dates) are understood too.
type Doc interface {
	Get(field string) (any, bool)
}

// MapDoc is a decoded JSON object.
type MapDoc map[string]any

// Get returns the top-level field.
func (m MapDoc) Get(field string) (any, bool) {
	v, ok := m[field]
	return v, ok
}

// FieldValue is the value a field name (dotted or not) reaches in doc, as a where reads it:
// into nested objects, and into every object of an array on the way, whose values found act as
// one array (arrays among them flattened one level). ok is false when the field is missing.
func FieldValue(doc map[string]any, field string) (v any, ok bool) {
	root, rest, nested := strings.Cut(field, ".")
	if v, ok = doc[root]; !ok || !nested {
		return v, ok
	}
	return walkPath(v, strings.Split(rest, "."))
}

type emptyDoc struct{}

func (emptyDoc) Get(string) (any, bool) { return nil, false }

// Query is a parsed `where`. See the package doc for concurrency.
type Query struct {
	root     node // nil matches everything
	fields   []string
	subs     []*subPred // sub-queries of this query (theirs live in their own Query)
	resolved bool
}

// Parse parses a `where` query. nil, empty, `null`, `{}` and `[]` match everything. The
// error is a *push.Error: code 107 for malformed JSON, 111 for a malformed typed value
// (Date, GeoPoint, Pointer) or a createdAt/updatedAt string that is no time, 300 for
// everything else (other __type values included).
func Parse(where json.RawMessage) (*Query, error) {
	return ParseAt(where, time.Now())
}

// ParseAt is Parse with the instant a {"$relativeTime": …} operand counts from: "3 days ago"
// is 72 hours before now. Callers that evaluate a query more than once, or on behalf of a
// push that fans out over minutes, pass one instant so that every evaluation agrees.
func ParseAt(where json.RawMessage, now time.Time) (*Query, error) {
	if len(where) > MaxQueryBytes {
		return nil, errQuery("query is %d bytes, more than the limit of %d", len(where), MaxQueryBytes)
	}
	if isBlank(where) {
		return &Query{}, nil
	}
	if jsonDepth(where) > MaxJSONDepth {
		return nil, errQuery("query nests JSON deeper than %d levels", MaxJSONDepth)
	}
	// jsondoc decodes as encoding/json does, without reflection; it fails where encoding/json
	// fails, whose message the error keeps.
	x, err := jsondoc.Decode(where)
	if err != nil {
		if uerr := json.Unmarshal(where, new(any)); uerr != nil {
			err = uerr // encoding/json's message, as clients have read it
		}
		return nil, push.Errorf(push.CodeInvalidJSON, "invalid JSON in where: %s", clip(err.Error()))
	}
	p := &parser{now: now.Truncate(time.Millisecond).UTC()}
	q, err := p.query(x, 0, "where")
	if err != nil {
		return nil, err
	}
	if p.subs > 0 {
		markWhole(q.root, false)
	}
	return q, nil
}

// Match reports whether d satisfies the query. It does not allocate for documents whose
// values are plain decoded JSON.
func (q *Query) Match(d Doc) bool {
	if q == nil || q.root == nil {
		return true
	}
	if len(q.subs) > 0 && !q.resolved {
		return false
	}
	if d == nil {
		d = emptyDoc{}
	}
	return q.root.match(d)
}

// MatchesAll reports whether the query has no condition at all, so that every document
// matches without evaluating it: nothing but empty objects, $and of those, or an $or with
// one of those. A query that reads no field is not necessarily one: {"$nor":[{}]} and
// {"$not":{}} match nothing. It is false while sub-queries await Resolve, since Match is.
func (q *Query) MatchesAll() bool {
	return q == nil || !q.NeedsResolve() && matchesAll(q.root)
}

func matchesAll(n node) bool {
	switch n := n.(type) {
	case nil:
		return true
	case andNode:
		for _, c := range n {
			if !matchesAll(c) {
				return false
			}
		}
		return true
	case orNode:
		for _, c := range n {
			if matchesAll(c) {
				return true
			}
		}
		return false
	case *fieldNode:
		return len(n.preds) == 0
	}
	return false
}

// Fields returns every top-level field name the query reads from a document, sorted
// (fields read only by sub-queries are not included: they are read from other documents).
func (q *Query) Fields() []string {
	if q == nil {
		return nil
	}
	return append([]string(nil), q.fields...)
}

// NeedsResolve reports whether the query has sub-queries that Resolve has not run yet.
func (q *Query) NeedsResolve() bool {
	return q != nil && len(q.subs) > 0 && !q.resolved
}

// collectFields lists the top-level fields n reads.
func collectFields(n node, set map[string]struct{}) {
	eachField(n, false, func(f *fieldNode, _ bool) { set[f.name] = struct{}{} })
}

// eachField calls fn for every field condition of the logical tree n, with neg telling
// whether it sits under an odd number of negations ($nor, $not) counted from neg.
func eachField(n node, neg bool, fn func(f *fieldNode, neg bool)) {
	switch n := n.(type) {
	case andNode:
		for _, c := range n {
			eachField(c, neg, fn)
		}
	case orNode:
		for _, c := range n {
			eachField(c, neg, fn)
		}
	case norNode:
		for _, c := range n {
			eachField(c, !neg, fn)
		}
	case notNode:
		eachField(n.n, !neg, fn)
	case *fieldNode:
		fn(n, neg)
	}
}

func sortedSet(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isBlank(b []byte) bool {
	s := string(trimSpace(b))
	return s == "" || s == "null" || s == "{}" || s == "[]"
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// jsonDepth is the maximum nesting of arrays and objects in b, counted without decoding
// (strings are skipped), so hostile nesting is refused before encoding/json recurses.
func jsonDepth(b []byte) int {
	depth, max := 0, 0
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
			if depth > max {
				max = depth
			}
		case '}', ']':
			depth--
		}
	}
	return max
}

func errQuery(format string, args ...any) error {
	return push.Errorf(push.CodeInvalidQuery, "invalid query: "+format, args...)
}

func errType(format string, args ...any) error {
	return push.Errorf(push.CodeInvalidType, "invalid query: "+format, args...)
}

// clip shortens client-supplied text quoted in an error message.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
