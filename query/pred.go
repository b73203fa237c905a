package query

import (
	"regexp"
)

// node is a compiled query clause evaluated against a whole document.
type node interface {
	match(d Doc) bool
}

type andNode []node

func (n andNode) match(d Doc) bool {
	for _, c := range n {
		if !c.match(d) {
			return false
		}
	}
	return true
}

type orNode []node

func (n orNode) match(d Doc) bool {
	for _, c := range n {
		if c.match(d) {
			return true
		}
	}
	return false
}

type norNode []node

func (n norNode) match(d Doc) bool { return !orNode(n).match(d) }

type notNode struct{ n node }

func (n notNode) match(d Doc) bool { return !n.n.match(d) }

// fieldNode reads one field (possibly a dotted path) once and applies its predicates.
type fieldNode struct {
	name  string   // top-level field
	path  []string // further steps into objects
	preds []pred
}

func (n *fieldNode) match(d Doc) bool {
	v, ok := d.Get(n.name)
	if ok && len(n.path) > 0 {
		v, ok = walkPath(v, n.path)
	}
	for _, p := range n.preds {
		if !p.test(v, ok) {
			return false
		}
	}
	return true
}

// walkPath follows path from v into nested objects. Across an array it goes on into every
// object of the array, as Mongo does: {"a.b": 1} matches {"a": [{"b": 1}, {"b": 2}]}.
func walkPath(v any, path []string) (any, bool) {
	for i, p := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				return nil, false
			}
		case []any:
			return pathInArray(x, path[i:])
		default:
			return nil, false
		}
	}
	return v, true
}

// pathInArray follows path into each object of arr and returns the values found as one array
// (arrays among them flattened one level), or false when no element has the path.
func pathInArray(arr []any, path []string) (any, bool) {
	var out []any
	for _, e := range arr {
		m, isMap := e.(map[string]any)
		if !isMap {
			continue
		}
		v, ok := walkPath(m, path)
		if !ok {
			continue
		}
		if a, isArr := v.([]any); isArr {
			out = append(out, a...)
		} else {
			out = append(out, v)
		}
	}
	if out == nil {
		return nil, false
	}
	return out, true
}

// pred is one condition on a field's value; ok is false when the field is missing.
type pred interface {
	test(v any, ok bool) bool
}

// eqPred is equality ($eq or a literal); on an array field it means contains.
type eqPred struct{ v value }

func (p *eqPred) test(v any, ok bool) bool {
	if !ok {
		return p.v.kind == kindNull
	}
	return eqOrContains(&p.v, v)
}

// nePred is the negation of eqPred: on an array field no element equals.
type nePred struct{ eq eqPred }

func (p *nePred) test(v any, ok bool) bool { return !p.eq.test(v, ok) }

type cmpOp uint8

const (
	opLT cmpOp = iota
	opLTE
	opGT
	opGTE
)

// cmpPred is $lt/$lte/$gt/$gte; on an array field any element may satisfy it.
type cmpPred struct {
	op cmpOp
	v  value
}

func (p *cmpPred) one(v any) bool {
	c, ok := compareTo(&p.v, v)
	if !ok {
		return false
	}
	switch p.op {
	case opLT:
		return c < 0
	case opLTE:
		return c <= 0
	case opGT:
		return c > 0
	}
	return c >= 0
}

func (p *cmpPred) test(v any, ok bool) bool {
	if !ok {
		return false
	}
	switch a := v.(type) {
	case []any:
		for _, e := range a {
			if p.one(e) {
				return true
			}
		}
		return false
	case []string:
		for _, e := range a {
			if p.one(e) {
				return true
			}
		}
		return false
	}
	return p.one(v)
}

// inSet is the operand list of $in/$nin/$containedBy and resolved $select results.
type inSet struct {
	strs    map[string]struct{}
	nums    map[float64]struct{}
	others  []value // every operand that is neither a string nor a number
	hasNull bool
	n       int // number of distinct operands
}

func newInSet(vals []value) inSet {
	var s inSet
	for i := range vals {
		s.add(vals[i])
	}
	return s
}

func (s *inSet) add(v value) {
	switch v.kind {
	case kindStr:
		if s.strs == nil {
			s.strs = make(map[string]struct{})
		}
		if _, dup := s.strs[v.s]; dup {
			return
		}
		s.strs[v.s] = struct{}{}
	case kindNum:
		if s.nums == nil {
			s.nums = make(map[float64]struct{})
		}
		if _, dup := s.nums[v.n]; dup {
			return
		}
		s.nums[v.n] = struct{}{}
	default:
		if v.kind == kindNull {
			s.hasNull = true
		}
		s.others = append(s.others, v)
	}
	s.n++
}

// has reports whether v (a single value, not spread) equals a member.
func (s *inSet) has(v any) bool {
	switch x := v.(type) {
	case string:
		if _, ok := s.strs[x]; ok {
			return true
		}
	default:
		if f, ok := toFloat(v); ok {
			if _, ok := s.nums[f]; ok {
				return true
			}
		}
	}
	for i := range s.others {
		if valueEq(&s.others[i], v) {
			return true
		}
	}
	return false
}

// contains is $in on a field value: the value or any of its elements is a member.
func (s *inSet) contains(v any, ok bool) bool {
	if !ok {
		return s.hasNull
	}
	if s.has(v) {
		return true
	}
	switch a := v.(type) {
	case []any:
		for _, e := range a {
			if s.has(e) {
				return true
			}
		}
	case []string:
		for _, e := range a {
			if s.has(e) {
				return true
			}
		}
	}
	return false
}

// onlyStrings returns the members when every member is a string.
func (s *inSet) onlyStrings() ([]string, bool) {
	if len(s.nums) > 0 || len(s.others) > 0 {
		return nil, false
	}
	out := make([]string, 0, len(s.strs))
	for k := range s.strs {
		out = append(out, k)
	}
	return out, true
}

// inPred is $in, or $nin when neg.
type inPred struct {
	set inSet
	neg bool
}

func (p *inPred) test(v any, ok bool) bool { return p.set.contains(v, ok) != p.neg }

// allPred is $all: every listed value is contained; an empty list matches nothing.
type allPred struct{ vals []value }

func (p *allPred) test(v any, ok bool) bool {
	if !ok || len(p.vals) == 0 {
		return false
	}
	for i := range p.vals {
		if !eqOrContains(&p.vals[i], v) {
			return false
		}
	}
	return true
}

// allRegexPred is $all with regex values: each regex matches the string, or an element of
// the array; an empty list never occurs (it parses as allPred).
type allRegexPred struct{ res []regexPred }

func (p *allRegexPred) test(v any, ok bool) bool {
	for i := range p.res {
		if !p.res[i].test(v, ok) {
			return false
		}
	}
	return true
}

// containedByPred is $containedBy: every element of the field is in the list.
type containedByPred struct{ set inSet }

func (p *containedByPred) test(v any, ok bool) bool {
	if !ok {
		return false
	}
	switch a := v.(type) {
	case []any:
		for _, e := range a {
			if !p.set.has(e) {
				return false
			}
		}
		return true
	case []string:
		for _, e := range a {
			if !p.set.has(e) {
				return false
			}
		}
		return true
	}
	return p.set.has(v)
}

type existsPred struct{ want bool }

func (p *existsPred) test(_ any, ok bool) bool { return ok == p.want }

// regexPred is $regex: a string, or any string element of an array, matches.
type regexPred struct{ re *regexp.Regexp }

func (p *regexPred) test(v any, ok bool) bool {
	if !ok {
		return false
	}
	switch x := v.(type) {
	case string:
		return p.re.MatchString(x)
	case []any:
		for _, e := range x {
			if s, isStr := e.(string); isStr && p.re.MatchString(s) {
				return true
			}
		}
	case []string:
		for _, s := range x {
			if p.re.MatchString(s) {
				return true
			}
		}
	}
	return false
}

type sizePred struct{ n int }

func (p *sizePred) test(v any, ok bool) bool {
	switch a := v.(type) {
	case []any:
		return ok && len(a) == p.n
	case []string:
		return ok && len(a) == p.n
	}
	return false
}

// notPred is the field-level $not: true unless every one of its predicates holds.
type notPred struct{ preds []pred }

func (p *notPred) test(v any, ok bool) bool {
	for _, q := range p.preds {
		if !q.test(v, ok) {
			return true
		}
	}
	return false
}
