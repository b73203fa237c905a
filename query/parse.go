package query

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
)

// maxFieldName bounds one field name (all its dotted segments).
const maxFieldName = 128

// parser carries the counters of limits that span a whole query, sub-queries included.
type parser struct {
	conds int
	subs  int
	now   time.Time // what {"$relativeTime": …} counts from
}

func (p *parser) count() error {
	p.conds++
	if p.conds > MaxConditions {
		return errQuery("more than %d conditions", MaxConditions)
	}
	return nil
}

// query builds a Query from a decoded `where` (an object, or an array of objects meaning AND).
func (p *parser) query(x any, depth int, what string) (*Query, error) {
	q := &Query{}
	var root node
	switch x := x.(type) {
	case nil:
	case map[string]any:
		n, err := p.object(x, depth, q)
		if err != nil {
			return nil, err
		}
		root = n
	case []any:
		if len(x) > MaxListLen {
			return nil, errQuery("%s has more than %d clauses", what, MaxListLen)
		}
		var and andNode
		for _, e := range x {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, push.Errorf(push.CodeInvalidJSON, "invalid query: %s must be a JSON object or an array of objects", what)
			}
			n, err := p.object(m, depth, q)
			if err != nil {
				return nil, err
			}
			and = append(and, n)
		}
		root = and
	default:
		return nil, push.Errorf(push.CodeInvalidJSON, "invalid query: %s must be a JSON object", what)
	}
	if a, ok := root.(andNode); ok && len(a) == 0 {
		root = nil
	}
	q.root = root
	set := make(map[string]struct{})
	collectFields(root, set)
	q.fields = sortedSet(set)
	return q, nil
}

// object parses one query object: fields and logical operators, all ANDed.
func (p *parser) object(m map[string]any, depth int, q *Query) (node, error) {
	if depth > MaxDepth {
		return nil, errQuery("nested deeper than %d levels", MaxDepth)
	}
	var out andNode
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "$or", "$and", "$nor":
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				return nil, errQuery("%s expects a non-empty array of queries", k)
			}
			if len(arr) > MaxListLen {
				return nil, errQuery("%s has more than %d entries", k, MaxListLen)
			}
			if err := p.count(); err != nil {
				return nil, err
			}
			children := make([]node, 0, len(arr))
			for _, e := range arr {
				em, ok := e.(map[string]any)
				if !ok {
					return nil, errQuery("%s expects an array of query objects", k)
				}
				n, err := p.object(em, depth+1, q)
				if err != nil {
					return nil, err
				}
				children = append(children, n)
			}
			switch k {
			case "$or":
				out = append(out, orNode(children))
			case "$and":
				out = append(out, andNode(children))
			default:
				out = append(out, norNode(children))
			}
		case "$not":
			em, ok := v.(map[string]any)
			if !ok {
				return nil, errQuery("$not expects a query object")
			}
			if err := p.count(); err != nil {
				return nil, err
			}
			n, err := p.object(em, depth+1, q)
			if err != nil {
				return nil, err
			}
			out = append(out, notNode{n})
		default:
			if strings.HasPrefix(k, "$") {
				return nil, errQuery("unsupported top-level operator %s", clip(k))
			}
			n, err := p.field(k, v, depth, q)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

// field parses the condition on one field: a literal (equality) or an operator object.
func (p *parser) field(name string, v any, depth int, q *Query) (node, error) {
	top, path, err := splitField(name)
	if err != nil {
		return nil, err
	}
	fn := &fieldNode{name: top, path: path}
	if m, ok := v.(map[string]any); ok && hasOperator(m) {
		preds, err := p.ops(name, m, depth, q)
		if err != nil {
			return nil, err
		}
		fn.preds = preds
		return fn, nil
	}
	if err := p.count(); err != nil {
		return nil, err
	}
	val, err := operand(v, name)
	if err != nil {
		return nil, err
	}
	fn.preds = []pred{&eqPred{v: val}}
	return fn, nil
}

// hasOperator reports whether an object is an operator object rather than a literal.
func hasOperator(m map[string]any) bool {
	if _, typed := m["__type"]; typed {
		return false
	}
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

// ops parses an operator object on a field; every operator must hold.
func (p *parser) ops(field string, m map[string]any, depth int, q *Query) ([]pred, error) {
	if depth > MaxDepth {
		return nil, errQuery("nested deeper than %d levels", MaxDepth)
	}
	var preds []pred
	for _, k := range sortedKeys(m) {
		if !strings.HasPrefix(k, "$") {
			return nil, errQuery("field %q mixes operators with the plain key %q", field, clip(k))
		}
		x := m[k]
		if err := p.count(); err != nil {
			return nil, err
		}
		switch k {
		case "$eq", "$ne":
			val, err := operand(x, field)
			if err != nil {
				return nil, err
			}
			if k == "$eq" {
				preds = append(preds, &eqPred{v: val})
			} else {
				preds = append(preds, &nePred{eq: eqPred{v: val}})
			}
		case "$lt", "$lte", "$gt", "$gte":
			val, isRelative, err := relativeOperand(x, p.now, k, field)
			if !isRelative && err == nil {
				val, err = operand(x, field)
			}
			if err != nil {
				return nil, err
			}
			switch val.kind {
			case kindNum, kindStr, kindDate, kindBool:
			default:
				return nil, errQuery("%s on field %q expects a number, string, Date or boolean, not %s", k, field, val.kind)
			}
			op := opGTE
			switch k {
			case "$lt":
				op = opLT
			case "$lte":
				op = opLTE
			case "$gt":
				op = opGT
			}
			preds = append(preds, &cmpPred{op: op, v: val})
		case "$in", "$nin":
			vals, err := list(flatten(x), k, field)
			if err != nil {
				return nil, err
			}
			preds = append(preds, &inPred{set: newInSet(vals), neg: k == "$nin"})
		case "$all":
			if res, ok, err := regexList(x, field); ok || err != nil {
				if err != nil {
					return nil, err
				}
				preds = append(preds, &allRegexPred{res: res})
				break
			}
			vals, err := list(x, k, field)
			if err != nil {
				return nil, err
			}
			preds = append(preds, &allPred{vals: vals})
		case "$containedBy":
			vals, err := list(x, k, field)
			if err != nil {
				return nil, err
			}
			preds = append(preds, &containedByPred{set: newInSet(vals)})
		case "$exists":
			if b, ok := x.(bool); ok {
				preds = append(preds, &existsPred{want: b})
			} // a non-boolean operand is ignored, as the original does
		case "$regex":
			pat, ok := x.(string)
			if !ok {
				return nil, errQuery("$regex on field %q expects a string", field)
			}
			var opts string
			if o, present := m["$options"]; present {
				if opts, ok = o.(string); !ok {
					return nil, errQuery("$options on field %q expects a string", field)
				}
			}
			re, err := compileRegex(pat, opts, field)
			if err != nil {
				return nil, err
			}
			preds = append(preds, &regexPred{re: re})
		case "$options":
			if _, ok := m["$regex"]; !ok {
				return nil, errQuery("$options on field %q without $regex", field)
			}
		case "$size":
			f, ok := x.(float64)
			if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
				return nil, errQuery("$size on field %q expects a non-negative integer", field)
			}
			preds = append(preds, &sizePred{n: int(f)})
		case "$not":
			om, ok := x.(map[string]any)
			if !ok || !hasOperator(om) {
				return nil, errQuery("$not on field %q expects an operator object", field)
			}
			inner, err := p.ops(field, om, depth+1, q)
			if err != nil {
				return nil, err
			}
			preds = append(preds, &notPred{preds: inner})
		case "$nearSphere":
			pr, err := nearSphere(x, m, field)
			if err != nil {
				return nil, err
			}
			preds = append(preds, pr)
		case "$maxDistance", "$maxDistanceInRadians", "$maxDistanceInMiles", "$maxDistanceInKilometers":
			if _, ok := m["$nearSphere"]; !ok {
				return nil, errQuery("%s on field %q without $nearSphere", k, field)
			}
		case "$within", "$geoWithin":
			pr, err := within(x, k, field)
			if err != nil {
				return nil, err
			}
			preds = append(preds, pr)
		case "$inQuery", "$notInQuery", "$select", "$dontSelect":
			sp, err := p.subPred(k, x, field, depth+1)
			if err != nil {
				return nil, err
			}
			q.subs = append(q.subs, sp)
			preds = append(preds, sp)
		default:
			if k == "$relativeTime" {
				return nil, errRelativeOperator(field)
			}
			return nil, errQuery("unsupported operator %s on field %q", clip(k), field)
		}
	}
	return preds, nil
}

// list parses the array operand of $in, $nin, $all and $containedBy.
func list(x any, op, field string) ([]value, error) {
	arr, ok := x.([]any)
	if !ok {
		return nil, errQuery("%s on field %q expects an array", op, field)
	}
	if len(arr) > MaxListLen {
		return nil, errQuery("%s on field %q has %d values, more than the limit of %d", op, field, len(arr), MaxListLen)
	}
	vals := make([]value, len(arr))
	for i, e := range arr {
		v, err := operand(e, field)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// flatten spreads the arrays among the elements of an array operand one level, as Parse
// Server does for $in and $nin (transformConstraint's flatMap): [["a","b"],"c"] is
// ["a","b","c"]. Anything else is returned as is.
func flatten(x any) any {
	arr, ok := x.([]any)
	if !ok {
		return x
	}
	nested := false
	for _, e := range arr {
		if _, isArr := e.([]any); isArr {
			nested = true
			break
		}
	}
	if !nested {
		return x
	}
	var out []any
	for _, e := range arr {
		if a, isArr := e.([]any); isArr {
			out = append(out, a...)
			if len(out) > MaxListLen {
				break // list reports the limit
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// regexList parses the operand of $all when its elements are {"$regex": p[, "$options": o]}
// objects (the SDKs' containsAllStartingWith). ok is false when none is; Parse Server
// refuses a list mixing regexes and values, and so does this.
func regexList(x any, field string) (res []regexPred, ok bool, err error) {
	arr, isArr := x.([]any)
	if !isArr {
		return nil, false, nil
	}
	n := 0
	for _, e := range arr {
		if m, isMap := e.(map[string]any); isMap {
			if _, has := m["$regex"]; has {
				n++
			}
		}
	}
	if n == 0 {
		return nil, false, nil
	}
	if n != len(arr) {
		return nil, true, errQuery("$all on field %q: either every value is a {\"$regex\": …} or none is", field)
	}
	if len(arr) > MaxListLen {
		return nil, true, errQuery("$all on field %q has %d values, more than the limit of %d", field, len(arr), MaxListLen)
	}
	res = make([]regexPred, len(arr))
	for i, e := range arr {
		m := e.(map[string]any)
		for k := range m {
			if k != "$regex" && k != "$options" {
				return nil, true, errQuery("$all on field %q: a regex value has only $regex and $options, not %s", field, clip(k))
			}
		}
		pat, isStr := m["$regex"].(string)
		if !isStr {
			return nil, true, errQuery("$regex in $all on field %q expects a string", field)
		}
		var opts string
		if o, present := m["$options"]; present {
			if opts, isStr = o.(string); !isStr {
				return nil, true, errQuery("$options in $all on field %q expects a string", field)
			}
		}
		if res[i].re, err = compileRegex(pat, opts, field); err != nil {
			return nil, true, err
		}
	}
	return res, true, nil
}

// operand parses a value a field is compared with (equality, $eq, $ne, $lt/$lte/$gt/$gte,
// the elements of $in, $nin, $all, $containedBy). On createdAt and updatedAt a string is a
// date, as Parse Server reads it (MongoTransform's valueAsDate): those fields hold times,
// and comparing their text would miss equal times written differently.
func operand(x any, field string) (value, error) {
	if s, ok := x.(string); ok && (field == "createdAt" || field == "updatedAt") {
		t, ok := parseISO(s)
		if !ok {
			return value{}, errType("field %q holds dates: %q is not an ISO 8601 time such as 2030-01-02T15:04:05.000Z "+
				"(a time without zone is UTC; a Date object {\"__type\":\"Date\",\"iso\":…} works too)", field, clip(s))
		}
		return value{kind: kindDate, t: t}, nil
	}
	return parseValue(x, field)
}

// nearSphere parses $nearSphere and its sibling maximum distance.
func nearSphere(x any, m map[string]any, field string) (pred, error) {
	center, err := geoOperand(x, "$nearSphere", field)
	if err != nil {
		return nil, err
	}
	max := defaultNearMiles / earthRadiusMiles
	found := ""
	for _, k := range []string{"$maxDistance", "$maxDistanceInRadians", "$maxDistanceInMiles", "$maxDistanceInKilometers"} {
		d, present := m[k]
		if !present {
			continue
		}
		if found != "" {
			return nil, errQuery("field %q has both %s and %s", field, found, k)
		}
		found = k
		f, ok := d.(float64)
		if !ok || f < 0 {
			return nil, errQuery("%s on field %q expects a non-negative number", k, field)
		}
		switch k {
		case "$maxDistanceInMiles":
			f /= earthRadiusMiles
		case "$maxDistanceInKilometers":
			f /= earthRadiusKm
		}
		max = f
	}
	return &nearPred{center: center, max: max}, nil
}

// within parses $within / $geoWithin with one of $box, $polygon, $centerSphere.
func within(x any, op, field string) (pred, error) {
	m, ok := x.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, errQuery("%s on field %q expects an object with one of $box, $polygon, $centerSphere", op, field)
	}
	for k, v := range m {
		switch k {
		case "$box":
			arr, ok := v.([]any)
			if !ok || len(arr) != 2 {
				return nil, errQuery("$box on field %q expects [southwest, northeast]", field)
			}
			sw, err := geoOperand(arr[0], "$box", field)
			if err != nil {
				return nil, err
			}
			ne, err := geoOperand(arr[1], "$box", field)
			if err != nil {
				return nil, err
			}
			if sw.lat > ne.lat {
				return nil, errQuery("$box on field %q: the southwest corner is north of the northeast corner", field)
			}
			if sw.lng > ne.lng {
				return nil, errQuery("$box on field %q may not cross the date line (southwest longitude above northeast)", field)
			}
			return &boxPred{sw: sw, ne: ne}, nil
		case "$polygon":
			arr, ok := v.([]any)
			if !ok || len(arr) < 3 {
				return nil, errQuery("$polygon on field %q expects at least 3 points", field)
			}
			if len(arr) > MaxListLen {
				return nil, errQuery("$polygon on field %q has more than %d points", field, MaxListLen)
			}
			pts := make([]geoPoint, len(arr))
			for i, e := range arr {
				pt, err := geoOperand(e, "$polygon", field)
				if err != nil {
					return nil, err
				}
				pts[i] = pt
			}
			return &polygonPred{pts: pts}, nil
		case "$centerSphere":
			arr, ok := v.([]any)
			if !ok || len(arr) != 2 {
				return nil, errQuery("$centerSphere on field %q expects [center, radians]", field)
			}
			c, err := geoOperand(arr[0], "$centerSphere", field)
			if err != nil {
				return nil, err
			}
			r, ok := arr[1].(float64)
			if !ok || r < 0 {
				return nil, errQuery("$centerSphere on field %q expects a non-negative radius in radians", field)
			}
			return &nearPred{center: c, max: r}, nil
		}
		return nil, errQuery("unsupported %s shape %s on field %q", op, clip(k), field)
	}
	panic("BUG: unreachable")
}

// geoOperand reads a point: a GeoPoint object, or a [longitude, latitude] pair.
func geoOperand(x any, op, field string) (geoPoint, error) {
	if arr, ok := x.([]any); ok {
		lng, ok1 := float(arr, 0)
		lat, ok2 := float(arr, 1)
		if len(arr) != 2 || !ok1 || !ok2 {
			return geoPoint{}, errQuery("%s on field %q: a point is a GeoPoint or [longitude, latitude]", op, field)
		}
		if err := checkGeo(lat, lng, field); err != nil {
			return geoPoint{}, err
		}
		return geoPoint{lat: lat, lng: lng}, nil
	}
	m, ok := x.(map[string]any)
	if !ok || m["__type"] != "GeoPoint" {
		return geoPoint{}, errQuery("%s on field %q expects a GeoPoint", op, field)
	}
	v, err := parseTyped(m, field)
	if err != nil {
		return geoPoint{}, err
	}
	return geoPoint{lat: v.n, lng: v.m}, nil
}

func float(arr []any, i int) (float64, bool) {
	if i >= len(arr) {
		return 0, false
	}
	f, ok := arr[i].(float64)
	return f, ok
}

// splitField validates a field name and splits a dotted path.
func splitField(name string) (string, []string, error) {
	if len(name) > maxFieldName {
		return "", nil, errQuery("field name %q is longer than %d bytes", clip(name), maxFieldName)
	}
	top, rest, dotted := strings.Cut(name, ".")
	if !validName(top) {
		return "", nil, errQuery("invalid field name %q (letters, digits and underscores, starting with a letter or underscore)", clip(name))
	}
	if !dotted {
		return top, nil, nil
	}
	path := strings.Split(rest, ".")
	for _, s := range path {
		if !validName(s) {
			return "", nil, errQuery("invalid field name %q (letters, digits and underscores, starting with a letter or underscore)", clip(name))
		}
	}
	return top, path, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
