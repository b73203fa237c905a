package query

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// kind is the type of an operand after parsing.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNum
	kindStr
	kindDate
	kindGeo
	kindPtr
	kindArr
	kindObj
)

func (k kind) String() string {
	return [...]string{"null", "boolean", "number", "string", "Date", "GeoPoint", "Pointer", "array", "object"}[k]
}

// value is a parsed operand. Only the fields of its kind are set.
type value struct {
	kind kind
	b    bool
	n    float64 // number; latitude of a GeoPoint
	m    float64 // longitude of a GeoPoint
	s    string  // string; objectId of a Pointer
	c    string  // className of a Pointer
	t    time.Time
	arr  []value
	keys []string // object keys, with vals in the same order
	vals []value
}

// parseValue turns a decoded JSON operand into a value. Objects with "__type" become typed
// values; objects with operator keys are not values.
func parseValue(x any, field string) (value, error) {
	switch x := x.(type) {
	case nil:
		return value{kind: kindNull}, nil
	case bool:
		return value{kind: kindBool, b: x}, nil
	case float64:
		return value{kind: kindNum, n: x}, nil
	case string:
		return value{kind: kindStr, s: x}, nil
	case []any:
		v := value{kind: kindArr, arr: make([]value, len(x))}
		for i, e := range x {
			ev, err := parseValue(e, field)
			if err != nil {
				return value{}, err
			}
			v.arr[i] = ev
		}
		return v, nil
	case map[string]any:
		if _, ok := x["__type"]; ok {
			return parseTyped(x, field)
		}
		keys := sortedKeys(x)
		v := value{kind: kindObj, keys: keys, vals: make([]value, len(keys))}
		for i, k := range keys {
			if k == "$relativeTime" {
				return value{}, errRelativeOperator(field)
			}
			if strings.HasPrefix(k, "$") {
				return value{}, errQuery("operator %s is not allowed inside a value of field %q", k, field)
			}
			ev, err := parseValue(x[k], field)
			if err != nil {
				return value{}, err
			}
			v.vals[i] = ev
		}
		return v, nil
	}
	return value{}, errQuery("unsupported value for field %q", field)
}

// parseTyped parses {"__type": ...} operands.
func parseTyped(x map[string]any, field string) (value, error) {
	typ, _ := x["__type"].(string)
	switch typ {
	case "Date":
		iso, ok := x["iso"].(string)
		if !ok || len(x) != 2 {
			return value{}, errType("field %q: a Date is {\"__type\":\"Date\",\"iso\":<ISO 8601>}", field)
		}
		t, ok := parseISO(iso)
		if !ok {
			return value{}, errType("field %q: invalid Date iso %q: want an ISO 8601 time such as 2030-01-02T15:04:05.000Z (a time without zone is UTC)", field, clip(iso))
		}
		return value{kind: kindDate, t: t}, nil
	case "GeoPoint":
		lat, ok1 := x["latitude"].(float64)
		lng, ok2 := x["longitude"].(float64)
		if !ok1 || !ok2 || len(x) != 3 {
			return value{}, errType("field %q: a GeoPoint is {\"__type\":\"GeoPoint\",\"latitude\":<number>,\"longitude\":<number>}", field)
		}
		if err := checkGeo(lat, lng, field); err != nil {
			return value{}, err
		}
		return value{kind: kindGeo, n: lat, m: lng}, nil
	case "Pointer":
		cls, ok1 := x["className"].(string)
		id, ok2 := x["objectId"].(string)
		if !ok1 || !ok2 || len(x) != 3 {
			return value{}, errType("field %q: a Pointer is {\"__type\":\"Pointer\",\"className\":<string>,\"objectId\":<string>}", field)
		}
		return value{kind: kindPtr, c: cls, s: id}, nil
	}
	// Other types (Bytes, File, Polygon, Object, Relation, …) have no column on
	// _Installation to compare with: not supported (docs/decisions.md, where language 9),
	// which is a query error, not a malformed value.
	if typ == "" {
		return value{}, errQuery("field %q: __type must be a string: one of Date, GeoPoint, Pointer", field)
	}
	return value{}, errQuery("field %q: __type %q is not supported in a query (supported: Date, GeoPoint, Pointer)", field, clip(typ))
}

func checkGeo(lat, lng float64, field string) error {
	if !(lat >= -90 && lat <= 90) || !(lng >= -180 && lng <= 180) {
		return errType("field %q: GeoPoint latitude must be within [-90, 90] and longitude within [-180, 180]", field)
	}
	return nil
}

// toFloat reads a number from a document value.
func toFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case int32:
		return float64(v), true
	case uint64:
		return float64(v), true
	case uint32:
		return float64(v), true
	case float32:
		return float64(v), true
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil
	}
	return 0, false
}

// docDate reads a date from a document value: an ISO 8601 string or a Date object.
func docDate(v any) (time.Time, bool) {
	switch v := v.(type) {
	case string:
		return parseISO(v)
	case map[string]any:
		if v["__type"] != "Date" {
			return time.Time{}, false
		}
		iso, ok := v["iso"].(string)
		if !ok {
			return time.Time{}, false
		}
		return parseISO(iso)
	case time.Time:
		return v, true
	}
	return time.Time{}, false
}

// docGeo reads a GeoPoint object from a document value.
func docGeo(v any) (lat, lng float64, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || m["__type"] != "GeoPoint" {
		return 0, 0, false
	}
	lat, ok1 := m["latitude"].(float64)
	lng, ok2 := m["longitude"].(float64)
	return lat, lng, ok1 && ok2
}

// docPtr reads a Pointer object from a document value.
func docPtr(v any) (className, objectID string, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || m["__type"] != "Pointer" {
		return "", "", false
	}
	className, ok1 := m["className"].(string)
	objectID, ok2 := m["objectId"].(string)
	return className, objectID, ok1 && ok2
}

// valueEq reports whether the document value v equals the operand op (no array contains).
func valueEq(op *value, v any) bool {
	switch op.kind {
	case kindNull:
		return v == nil
	case kindBool:
		b, ok := v.(bool)
		return ok && b == op.b
	case kindNum:
		f, ok := toFloat(v)
		return ok && f == op.n
	case kindStr:
		s, ok := v.(string)
		return ok && s == op.s
	case kindDate:
		t, ok := docDate(v)
		return ok && t.Equal(op.t)
	case kindGeo:
		lat, lng, ok := docGeo(v)
		return ok && lat == op.n && lng == op.m
	case kindPtr:
		c, id, ok := docPtr(v)
		return ok && c == op.c && id == op.s
	case kindArr:
		if ss, ok := v.([]string); ok {
			if len(ss) != len(op.arr) {
				return false
			}
			for i := range ss {
				if op.arr[i].kind != kindStr || op.arr[i].s != ss[i] {
					return false
				}
			}
			return true
		}
		a, ok := v.([]any)
		if !ok || len(a) != len(op.arr) {
			return false
		}
		for i := range a {
			if !valueEq(&op.arr[i], a[i]) {
				return false
			}
		}
		return true
	case kindObj:
		m, ok := v.(map[string]any)
		if !ok || len(m) != len(op.keys) {
			return false
		}
		for i, k := range op.keys {
			dv, ok := m[k]
			if !ok || !valueEq(&op.vals[i], dv) {
				return false
			}
		}
		return true
	}
	return false
}

// eqOrContains is field equality: the value equals op, or it is an array with an element
// equal to op.
func eqOrContains(op *value, v any) bool {
	if valueEq(op, v) {
		return true
	}
	switch a := v.(type) {
	case []any:
		for i := range a {
			if valueEq(op, a[i]) {
				return true
			}
		}
	case []string:
		if op.kind == kindStr {
			for _, s := range a {
				if s == op.s {
					return true
				}
			}
		}
	}
	return false
}

// compareTo compares the document value v with the operand op: the sign of v - op, and
// whether the two are comparable at all (same type bracket).
func compareTo(op *value, v any) (int, bool) {
	switch op.kind {
	case kindNum:
		f, ok := toFloat(v)
		if !ok || math.IsNaN(f) {
			return 0, false
		}
		return cmpFloat(f, op.n), true
	case kindStr:
		s, ok := v.(string)
		return strings.Compare(s, op.s), ok
	case kindDate:
		t, ok := docDate(v)
		return t.Compare(op.t), ok
	case kindBool:
		b, ok := v.(bool)
		return cmpBool(b, op.b), ok
	}
	return 0, false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// ParseISO reads a Date's iso as a where does (parseISO): the API checks stored Dates with it,
// so that every Date a document holds is one a query can compare.
func ParseISO(s string) (time.Time, bool) { return parseISO(s) }

// parseISO parses an ISO 8601 timestamp of the form YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM]
// without allocating, also on failure (document fields are parsed per row). Without a zone
// the time is UTC, as pushd's push_time reads it.
func parseISO(s string) (time.Time, bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	i := 19
	nsec := 0
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		scale := 100000000
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			nsec += int(s[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == start || i-start > 9 {
			return time.Time{}, false
		}
	}
	offset := 0
	switch rest := s[i:]; {
	case rest == "Z", rest == "":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		offset = (oh*60 + om) * 60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if offset != 0 {
		t = t.Add(-time.Duration(offset) * time.Second)
	}
	return t, true
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// Compare is a total order over document values for `order=` sorting: missing/null <
// numbers < strings < objects < arrays < booleans < dates. Numbers compare numerically
// (NaN first), strings bytewise, dates (Date objects, time.Time) by instant, arrays
// element by element, Pointers by className then objectId; other objects tie.
// ISO date strings such as createdAt compare as strings, which orders them by time
// when they share the stored format.
func Compare(a, b any) int {
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch ra {
	case rankNum:
		x, _ := toFloat(a)
		y, _ := toFloat(b)
		xn, yn := math.IsNaN(x), math.IsNaN(y)
		if xn || yn {
			return cmpBool(!xn, !yn)
		}
		return cmpFloat(x, y)
	case rankStr:
		return strings.Compare(a.(string), b.(string))
	case rankObj:
		c1, id1, ok1 := docPtr(a)
		c2, id2, ok2 := docPtr(b)
		if ok1 != ok2 {
			return cmpBool(ok1, ok2)
		}
		if c := strings.Compare(c1, c2); c != 0 {
			return c
		}
		return strings.Compare(id1, id2)
	case rankArr:
		x, y := a.([]any), b.([]any)
		for i := 0; i < len(x) && i < len(y); i++ {
			if c := Compare(x[i], y[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(x), len(y))
	case rankBool:
		return cmpBool(a.(bool), b.(bool))
	case rankDate:
		x, _ := docDate(a)
		y, _ := docDate(b)
		return x.Compare(y)
	}
	return 0
}

const (
	rankNull = iota
	rankNum
	rankStr
	rankObj
	rankArr
	rankBool
	rankDate
	rankOther
)

func rank(v any) int {
	switch v := v.(type) {
	case nil:
		return rankNull
	case float64, float32, int, int64, int32, uint64, uint32, json.Number:
		return rankNum
	case string:
		return rankStr
	case map[string]any:
		if _, ok := docDate(v); ok {
			return rankDate
		}
		return rankObj
	case []any:
		return rankArr
	case bool:
		return rankBool
	case time.Time:
		return rankDate
	}
	return rankOther
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
