package jsondoc

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is encoding/json's maxNestingDepth: objects and arrays may nest 10000 deep, and the
// 10001st level is an error there, so it is an error here.
const maxDepth = 10000

// DecodeObject decodes b like json.Unmarshal(b, &m) with m a nil map[string]any: the same
// result and the same accept/reject decision for every input (JSON null gives a nil map and no
// error, like encoding/json).
func DecodeObject(b []byte) (map[string]any, error) {
	v, err := Decode(b)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("cannot decode JSON object: the document is %s, not an object", kindOf(v))
}

// Decode decodes any JSON value like json.Unmarshal(b, &v) with v an `any`.
//
// The decoded strings share one copy of b (never b itself): keeping any of them keeps that copy
// alive, so strings.Clone a small string that outlives the document by far.
func Decode(b []byte) (any, error) {
	sp := getScratch()
	d := decoder{data: b, src: string(b), open: *sp}
	d.skipSpace()
	v, err := d.value()
	putScratch(sp, d.open)
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.off < len(d.data) {
		return nil, d.errorf("invalid character %s after top-level value", describe(d.data[d.off]))
	}
	return v, nil
}

// decoder reads one JSON text in a single pass; encoding/json's checkValid pass and its decode
// pass reject the same inputs, so one pass that validates as it builds gives the same decisions.
//
// Strings without escapes are cut from src, one copy of the whole input, so they cost no
// allocation each; a decoded document therefore keeps that copy alive while any of its strings
// is in use, which for a document of a few kilobytes is the document's own size.
type decoder struct {
	data  []byte
	src   string // string(data)
	off   int    // next byte to read
	depth int    // objects and arrays open around data[off]
	buf   []byte // scratch for strings with escapes or invalid UTF-8

	// Members of the open objects and elements of the open arrays, innermost last: each
	// container collects here, then allocates its map or slice once at the exact size.
	open []member
}

type member struct {
	key string // "" for an array element
	val any
}

// scratchPool holds the member stacks of Decode and AppendMarshal calls. A stack in a local
// array moved to the heap (the compiler cannot tell that appends to it stay in the call), 512
// bytes per call; two decodes and an encode per installation upsert.
var scratchPool = sync.Pool{New: func() any { s := make([]member, 0, 16); return &s }}

func getScratch() *[]member { return scratchPool.Get().(*[]member) }

// putScratch returns s, the stack taken as *sp and maybe grown since, to the pool, cleared so
// that it keeps no document alive; a stack grown past 1024 members is left to the collector.
func putScratch(sp *[]member, s []member) {
	if cap(s) > 1024 {
		return
	}
	clear(s[:cap(s)])
	*sp = s[:0]
	scratchPool.Put(sp)
}

func (d *decoder) skipSpace() {
	for d.off < len(d.data) {
		switch d.data[d.off] {
		case ' ', '\t', '\n', '\r':
			d.off++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, error) {
	if d.off >= len(d.data) {
		return nil, d.eof()
	}
	switch c := d.data[d.off]; c {
	case '{':
		return d.object()
	case '[':
		return d.array()
	case '"':
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := d.number()
		if err != nil {
			return nil, err
		}
		if f >= 0 && f < float64(len(smallNumbers)) && f == math.Trunc(f) && !math.Signbit(f) {
			return smallNumbers[int(f)], nil
		}
		return f, nil
	default:
		return nil, d.errorf("invalid character %s looking for beginning of value", describe(c))
	}
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	base := len(d.open)
	d.skipSpace()
	if d.off < len(d.data) && d.data[d.off] == '}' {
		d.off++
		d.depth--
		return make(map[string]any), nil
	}
	for {
		if d.off >= len(d.data) {
			return nil, d.eof()
		}
		if c := d.data[d.off]; c != '"' {
			return nil, d.errorf("invalid character %s looking for beginning of object key string", describe(c))
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.off >= len(d.data) {
			return nil, d.eof()
		}
		if c := d.data[d.off]; c != ':' {
			return nil, d.errorf("invalid character %s after object key", describe(c))
		}
		d.off++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.open = append(d.open, member{k, v})
		d.skipSpace()
		if d.off >= len(d.data) {
			return nil, d.eof()
		}
		switch c := d.data[d.off]; c {
		case ',':
			d.off++
			d.skipSpace()
		case '}':
			d.off++
			d.depth--
			m := make(map[string]any, len(d.open)-base)
			for _, kv := range d.open[base:] {
				m[kv.key] = kv.val // a later duplicate key wins, whole: encoding/json does not merge objects
			}
			d.open = d.open[:base]
			return m, nil
		default:
			return nil, d.errorf("invalid character %s after object key:value pair", describe(c))
		}
	}
}

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	base := len(d.open)
	d.skipSpace()
	if d.off < len(d.data) && d.data[d.off] == ']' {
		d.off++
		d.depth--
		return make([]any, 0), nil // never nil: encoding/json gives [] for an empty array
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.open = append(d.open, member{val: v})
		d.skipSpace()
		if d.off >= len(d.data) {
			return nil, d.eof()
		}
		switch c := d.data[d.off]; c {
		case ',':
			d.off++
			d.skipSpace()
		case ']':
			d.off++
			d.depth--
			a := make([]any, len(d.open)-base)
			for i, kv := range d.open[base:] {
				a[i] = kv.val
			}
			d.open = d.open[:base]
			return a, nil
		default:
			return nil, d.errorf("invalid character %s after array element", describe(c))
		}
	}
}

// enter consumes the '{' or '[' at d.off and opens one nesting level.
func (d *decoder) enter() error {
	if d.depth++; d.depth > maxDepth {
		return d.errorf("exceeded max depth %d", maxDepth)
	}
	d.off++
	return nil
}

func (d *decoder) literal(word string) error {
	for i := 0; i < len(word); i++ {
		if d.off >= len(d.data) {
			return d.eof()
		}
		if d.data[d.off] != word[i] {
			return d.errorf("invalid character %s in literal %s", describe(d.data[d.off]), word)
		}
		d.off++
	}
	return nil
}

// smallNumbers holds 0 through 255 already boxed as float64, so counters and badges in a
// document cost no allocation each (the interface values are equal to freshly boxed ones).
var smallNumbers = func() (t [256]any) {
	for i := range t {
		t[i] = float64(i)
	}
	return t
}()

// maxExactDigits is the longest run of integer digits that always converts to float64 exactly
// (10^15 < 2^53), so the fast path gives the same value as strconv.ParseFloat.
const maxExactDigits = 15

// number reads a number by the JSON grammar and converts it like encoding/json does, with
// strconv.ParseFloat (so 1e400 is an error). Short integers take an exact shortcut.
func (d *decoder) number() (float64, error) {
	start := d.off
	i := start
	neg := d.data[i] == '-'
	if neg {
		i++
	}
	intStart := i
	switch {
	case i >= len(d.data):
		d.off = i
		return 0, d.eof()
	case d.data[i] == '0':
		i++
	case '1' <= d.data[i] && d.data[i] <= '9':
		i = d.digits(i + 1)
	default:
		d.off = i
		return 0, d.errorf("invalid character %s in numeric literal", describe(d.data[i]))
	}
	intEnd := i
	if i < len(d.data) && d.data[i] == '.' {
		i++
		if i >= len(d.data) {
			d.off = i
			return 0, d.eof()
		}
		if !isDigit(d.data[i]) {
			d.off = i
			return 0, d.errorf("invalid character %s after decimal point in numeric literal", describe(d.data[i]))
		}
		i = d.digits(i + 1)
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if i >= len(d.data) {
			d.off = i
			return 0, d.eof()
		}
		if !isDigit(d.data[i]) {
			d.off = i
			return 0, d.errorf("invalid character %s in exponent of numeric literal", describe(d.data[i]))
		}
		i = d.digits(i + 1)
	}
	d.off = i
	if i == intEnd && intEnd-intStart <= maxExactDigits {
		var u uint64
		for _, c := range d.data[intStart:intEnd] {
			u = u*10 + uint64(c-'0')
		}
		f := float64(u)
		if neg {
			f = -f // -0 stays negative zero, as strconv.ParseFloat("-0") gives
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(string(d.data[start:i]), 64)
	if err != nil {
		return 0, fmt.Errorf("cannot decode JSON: number %s out of range at offset %d", d.data[start:i], start)
	}
	return f, nil
}

func (d *decoder) digits(i int) int { return digitsEnd(d.data, i) }

// digitsEnd is the index past the run of digits of b that starts at i.
func digitsEnd(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// str reads the string starting at the '"' at d.off.
func (d *decoder) str() (string, error) {
	start := d.off + 1
	for i := start; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			d.off = i + 1
			return d.src[start:i], nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return d.strSlow(start, i)
		}
	}
	d.off = len(d.data)
	return "", d.eof()
}

// strSlow finishes a string that has escapes, control bytes or non-ASCII bytes from data[i]
// on: it checks the escapes as encoding/json's scanner does, then unquotes as its unquote does.
func (d *decoder) strSlow(start, i int) (string, error) {
	for {
		if i >= len(d.data) {
			d.off = i
			return "", d.eof()
		}
		switch c := d.data[i]; {
		case c == '"':
			d.off = i + 1
			return d.unquote(start, i), nil
		case c == '\\':
			i++
			if i >= len(d.data) {
				d.off = i
				return "", d.eof()
			}
			switch d.data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				i++
				for n := 0; n < 4; n++ {
					if i >= len(d.data) {
						d.off = i
						return "", d.eof()
					}
					if hexValue(d.data[i]) < 0 {
						d.off = i
						return "", d.errorf("invalid character %s in \\u hexadecimal character escape", describe(d.data[i]))
					}
					i++
				}
			default:
				d.off = i
				return "", d.errorf("invalid character %s in string escape code", describe(d.data[i]))
			}
		case c < 0x20:
			d.off = i
			return "", d.errorf("invalid character %s in string literal", describe(c))
		default:
			i++
		}
	}
}

// unquote is encoding/json's unquoteBytes for data[start:end], the inside of a string literal
// whose escapes are already known to be well formed.
func (d *decoder) unquote(start, end int) string {
	s := d.data[start:end]
	if utf8.Valid(s) && !hasBackslash(s) {
		return d.src[start:end]
	}
	b := d.buf[:0]
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					// A valid pair is consumed whole; anything else leaves the next escape to
					// the loop and this half becomes U+FFFD.
					if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
						r += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, s[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:]) // an invalid byte gives RuneError, size 1
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	d.buf = b
	return string(b)
}

func hasBackslash(s []byte) bool {
	for _, c := range s {
		if c == '\\' {
			return true
		}
	}
	return false
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		h := hexValue(c)
		if h < 0 {
			return -1
		}
		r = r*16 + h
	}
	return r
}

func hexValue(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

func (d *decoder) eof() error {
	return fmt.Errorf("cannot decode JSON: unexpected end of input at offset %d", len(d.data))
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("cannot decode JSON: %s at offset %d", fmt.Sprintf(format, args...), d.off)
}

// describe names a byte for an error message without echoing non-printable input.
func describe(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("0x%02x", c)
	}
	return strconv.QuoteRune(rune(c))
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
