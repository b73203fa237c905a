package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestQueryHints(t *testing.T) {
	cases := []struct {
		name, where string
		want        Hints
	}{
		{"none", `{}`, Hints{}},
		{"objectId equality", `{"objectId":"a"}`, Hints{ObjectIDs: []string{"a"}}},
		{"objectId $eq", `{"objectId":{"$eq":"a"}}`, Hints{ObjectIDs: []string{"a"}}},
		{"deviceToken $in", `{"deviceToken":{"$in":["t2","t1","t1"]}}`, Hints{DeviceTokens: []string{"t1", "t2"}}},
		{"installationId and registrationId", `{"installationId":"i","registrationId":{"$in":["r"]}}`,
			Hints{InstallationIDs: []string{"i"}, RegistrationIDs: []string{"r"}}},
		{"intersection", `{"objectId":{"$in":["a","b"]},"$and":[{"objectId":{"$in":["b","c"]}}]}`, Hints{ObjectIDs: []string{"b"}}},
		{"empty intersection", `{"objectId":"a","$and":[{"objectId":"b"}]}`, Hints{ObjectIDs: []string{}}},
		{"empty $in", `{"objectId":{"$in":[]}}`, Hints{ObjectIDs: []string{}}},
		{"$in with non-string gives nothing", `{"objectId":{"$in":["a",1]}}`, Hints{}},
		{"$in with null gives nothing", `{"objectId":{"$in":["a",null]}}`, Hints{}},
		{"$nin gives nothing", `{"objectId":{"$nin":["a"]}}`, Hints{}},
		{"$ne gives nothing", `{"objectId":{"$ne":"a"}}`, Hints{}},
		{"array equality gives nothing", `{"objectId":["a"]}`, Hints{}},
		{"channels equality", `{"channels":"sports"}`, Hints{Channels: []string{"sports"}}},
		{"channels $all", `{"channels":{"$all":["b","a"]}}`, Hints{Channels: []string{"a", "b"}}},
		{"channels equality and $all", `{"channels":"c","$and":[{"channels":{"$all":["a","c"]}}]}`, Hints{Channels: []string{"a", "c"}}},
		{"channels one-value $in", `{"channels":{"$in":["a"]}}`, Hints{Channels: []string{"a"}}},
		{"channels several-value $in gives nothing", `{"channels":{"$in":["a","b"]}}`, Hints{}},
		{"channels empty $all gives nothing", `{"channels":{"$all":[]}}`, Hints{}},
		{"channels array equality gives nothing", `{"channels":["a","b"]}`, Hints{}},
		{"deviceType", `{"deviceType":"ios"}`, Hints{DeviceType: "ios"}},
		{"deviceType one-value $in", `{"deviceType":{"$in":["android"]}}`, Hints{DeviceType: "android"}},
		{"deviceType two-value $in", `{"deviceType":{"$in":["android","ios"]}}`, Hints{}},
		{"implicit and array", `[{"deviceType":"ios"},{"channels":"x"}]`, Hints{DeviceType: "ios", Channels: []string{"x"}}},
		{"under $or nothing", `{"$or":[{"objectId":"a"},{"channels":"x"}]}`, Hints{}},
		{"under $nor nothing", `{"$nor":[{"deviceType":"ios"}]}`, Hints{}},
		{"under $not nothing", `{"$not":{"channels":"x"}}`, Hints{}},
		{"field $not nothing", `{"channels":{"$not":{"$all":["x"]}}}`, Hints{}},
		{"dotted nothing", `{"objectId.x":"a"}`, Hints{}},
		{"mixed with $or", `{"deviceType":"ios","$or":[{"channels":"a"},{"channels":"b"}],"objectId":{"$in":["o1"]}}`,
			Hints{DeviceType: "ios", ObjectIDs: []string{"o1"}}},
		{"unresolved $select nothing", `{"objectId":{"$select":{"query":{"className":"_Installation"},"key":"objectId"}}}`, Hints{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := Parse(json.RawMessage(c.where))
			if err != nil {
				t.Fatal(err)
			}
			got := q.Hints()
			if !hintsEqual(got, c.want) {
				t.Errorf("Hints(%s): got %s, want %s", c.where, fmtHints(got), fmtHints(c.want))
			}
		})
	}
}

func hintsEqual(a, b Hints) bool {
	eq := func(x, y []string) bool { return (x == nil) == (y == nil) && slices.Equal(x, y) }
	return eq(a.ObjectIDs, b.ObjectIDs) && eq(a.DeviceTokens, b.DeviceTokens) &&
		eq(a.InstallationIDs, b.InstallationIDs) && eq(a.RegistrationIDs, b.RegistrationIDs) &&
		eq(a.Channels, b.Channels) && a.DeviceType == b.DeviceType
}

func fmtHints(h Hints) string {
	f := func(x []string) string {
		if x == nil {
			return "nil"
		}
		return "[" + strings.Join(x, " ") + "]"
	}
	return fmt.Sprintf("{obj:%s tok:%s iid:%s reg:%s ch:%s type:%q}", f(h.ObjectIDs), f(h.DeviceTokens),
		f(h.InstallationIDs), f(h.RegistrationIDs), f(h.Channels), h.DeviceType)
}

// satisfies reports whether a document lies within the hints.
func satisfies(d MapDoc, h Hints) bool {
	for i, ids := range [][]string{h.ObjectIDs, h.DeviceTokens, h.InstallationIDs, h.RegistrationIDs} {
		if ids == nil {
			continue
		}
		s, ok := d[idFields[i]].(string)
		if !ok || !slices.Contains(ids, s) {
			return false
		}
	}
	chans, _ := d["channels"].([]any)
	for _, c := range h.Channels {
		if !slices.Contains(chans, any(c)) {
			return false
		}
	}
	return h.DeviceType == "" || d["deviceType"] == h.DeviceType
}

// randGen builds random installations and queries over a small vocabulary, so that
// matches are frequent.
type randGen struct{ r *rand.Rand }

var hintFields = []string{"objectId", "deviceToken", "installationId", "registrationId", "deviceType", "channels", "badge"}

func (g randGen) str(field string) string {
	switch field {
	case "deviceType":
		return []string{"ios", "android"}[g.r.IntN(2)]
	case "channels":
		return fmt.Sprintf("c%d", g.r.IntN(4))
	}
	return fmt.Sprintf("%c%d", field[0], g.r.IntN(4))
}

func (g randGen) doc() MapDoc {
	d := MapDoc{}
	for _, f := range hintFields {
		if g.r.IntN(5) == 0 {
			continue // missing
		}
		switch f {
		case "channels":
			var cs []any
			for range g.r.IntN(4) {
				cs = append(cs, g.str(f))
			}
			d[f] = cs
		case "badge":
			d[f] = float64(g.r.IntN(4))
		default:
			d[f] = g.str(f)
		}
	}
	return d
}

func (g randGen) operand(f string) any {
	if f == "badge" {
		return float64(g.r.IntN(4))
	}
	if g.r.IntN(10) == 0 {
		return float64(1) // a wrong-typed operand now and then
	}
	return g.str(f)
}

func (g randGen) list(f string) []any {
	out := []any{}
	for range g.r.IntN(4) {
		out = append(out, g.operand(f))
	}
	return out
}

func (g randGen) cond(f string) any {
	switch g.r.IntN(10) {
	case 0:
		return map[string]any{"$in": g.list(f)}
	case 1:
		return map[string]any{"$nin": g.list(f)}
	case 2:
		return map[string]any{"$all": g.list(f)}
	case 3:
		return map[string]any{"$ne": g.operand(f)}
	case 4:
		return map[string]any{"$eq": g.operand(f), "$exists": true}
	case 5:
		return map[string]any{"$not": map[string]any{"$in": g.list(f)}}
	case 6:
		return map[string]any{"$exists": g.r.IntN(2) == 0}
	case 7:
		return g.list(f) // exact array equality
	}
	return g.operand(f)
}

func (g randGen) query(depth int) map[string]any {
	q := map[string]any{}
	for range 1 + g.r.IntN(3) {
		if depth < 3 && g.r.IntN(4) == 0 {
			var subs []any
			for range 1 + g.r.IntN(3) {
				subs = append(subs, g.query(depth+1))
			}
			op := []string{"$and", "$or", "$nor"}[g.r.IntN(3)]
			if op == "$and" && g.r.IntN(2) == 0 {
				q["$not"] = subs[0]
				continue
			}
			q[op] = subs
			continue
		}
		f := hintFields[g.r.IntN(len(hintFields))]
		q[f] = g.cond(f)
	}
	return q
}

// TestQueryHintsNeverExclude checks the planner's safety property: whenever Match holds,
// the document satisfies the hints.
func TestQueryHintsNeverExclude(t *testing.T) {
	g := randGen{rand.New(rand.NewPCG(1, 2))}
	docs := make([]MapDoc, 200)
	for i := range docs {
		docs[i] = g.doc()
	}
	matched, hinted := 0, 0
	for range 3000 {
		raw, _ := json.Marshal(g.query(0))
		q, err := Parse(raw)
		if err != nil {
			t.Fatalf("Parse(%s): %v", raw, err)
		}
		h := q.Hints()
		if !hintsEqual(h, Hints{}) {
			hinted++
		}
		for _, d := range docs {
			if q.Match(d) {
				matched++
				if !satisfies(d, h) {
					dj, _ := json.Marshal(d)
					t.Fatalf("query %s matches %s but its hints %s exclude it", raw, dj, fmtHints(h))
				}
			}
		}
	}
	if matched == 0 || hinted == 0 {
		t.Fatalf("generator too weak: %d matches, %d queries with hints", matched, hinted)
	}
	t.Logf("%d matches checked, %d of 3000 queries gave hints", matched, hinted)
}

// TestQueryHintsResolvedSelect: a resolved $select means "any of its values" (Parse rewrites
// it to $in), so it pins channels or deviceType only when it has exactly one value.
func TestQueryHintsResolvedSelect(t *testing.T) {
	installs := &scanner{docs: []MapDoc{
		{"objectId": "a", "deviceType": "ios", "tag": "even"},
		{"objectId": "b", "deviceType": "android", "tag": "odd"},
		{"objectId": "c", "deviceType": "ios", "tag": "even"},
	}}
	sel := func(field, where, key string) string {
		return fmt.Sprintf(`{%q:{"$select":{"query":{"className":"_Installation","where":%s},"key":%q}}}`, field, where, key)
	}
	cases := []struct {
		name, where string
		want        Hints
	}{
		{"channels two values gives nothing", sel("channels", `{}`, "tag"), Hints{}},
		{"channels one value", sel("channels", `{"tag":"odd"}`, "tag"), Hints{Channels: []string{"odd"}}},
		{"channels no value gives nothing", sel("channels", `{"tag":"none"}`, "tag"), Hints{}},
		{"channels $select and equality", `{"channels":"x","$and":[` + sel("channels", `{}`, "tag") + `]}`, Hints{Channels: []string{"x"}}},
		{"deviceType two values gives nothing", sel("deviceType", `{}`, "deviceType"), Hints{}},
		{"deviceType one value", sel("deviceType", `{"tag":"odd"}`, "deviceType"), Hints{DeviceType: "android"}},
		{"objectId values", sel("objectId", `{"tag":"even"}`, "objectId"), Hints{ObjectIDs: []string{"a", "c"}}},
		{"objectId no value", sel("objectId", `{"tag":"none"}`, "objectId"), Hints{ObjectIDs: []string{}}},
		{"dontSelect gives nothing", `{"channels":{"$dontSelect":{"query":{"className":"_Installation","where":{"tag":"odd"}},"key":"tag"}}}`, Hints{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := Parse(json.RawMessage(c.where))
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Resolve(context.Background(), installs.run); err != nil {
				t.Fatal(err)
			}
			if got := q.Hints(); !hintsEqual(got, c.want) {
				t.Errorf("Hints(%s): got %s, want %s", c.where, fmtHints(got), fmtHints(c.want))
			}
		})
	}
	// The hints never exclude a match: channels holding either value match the two-value query.
	q, err := Parse(json.RawMessage(sel("channels", `{}`, "tag")))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Resolve(context.Background(), installs.run); err != nil {
		t.Fatal(err)
	}
	for _, d := range []MapDoc{{"channels": []any{"even"}}, {"channels": []any{"odd"}}} {
		if !q.Match(d) || !satisfies(d, q.Hints()) {
			t.Errorf("doc %v: Match %v, within hints %s %v; want both true", d, q.Match(d), fmtHints(q.Hints()), satisfies(d, q.Hints()))
		}
	}
}
