package jsondoc

import (
	"encoding/json"
	"unicode/utf8"
)

// compactDepth bounds how deep CompactValueEnd walks; deeper values are left to encoding/json.
const compactDepth = 100

// CompactValueEnd walks one JSON value starting at b[i] that has no whitespace between its
// tokens, and returns the index just past it. ok is false when the value is not valid JSON,
// holds whitespace, or nests deeper than 100: the caller then leaves it to encoding/json.
// A value it accepts is one json.Valid accepts. Strings are checked for their escapes and
// control bytes, not for UTF-8, as encoding/json's scanner does.
func CompactValueEnd(b []byte, i int) (end int, ok bool) {
	w := walker{b: b, i: i}
	if !w.value(0) {
		return i, false
	}
	return w.i, true
}

// Members decodes b, a JSON object without whitespace between its tokens, as json.Unmarshal
// into a map[string]json.RawMessage does: the last of a repeated key wins, and each value is
// its bytes, copied (the values share one copy of b). ok is false when b is not in that shape
// or a key needs unquoting (an escape, invalid UTF-8): the caller then uses json.Unmarshal.
func Members(b []byte) (m map[string]json.RawMessage, ok bool) {
	w := walker{b: b}
	if !w.lit('{') {
		return nil, false
	}
	var own []byte // b's copy, made at the first value
	m = make(map[string]json.RawMessage, 8)
	ok = w.seq('}', func() bool {
		ks, ke, plain := PlainString(b, w.i)
		if !plain {
			return false
		}
		w.i = ke + 1
		if !w.lit(':') {
			return false
		}
		start := w.i
		if !w.value(0) {
			return false
		}
		if own == nil {
			own = append([]byte(nil), b...)
		}
		m[string(b[ks:ke])] = own[start:w.i:w.i]
		return true
	})
	if !ok || w.i != len(b) {
		return nil, false
	}
	return m, true
}

type walker struct {
	b []byte
	i int
}

func (w *walker) lit(c byte) bool {
	if w.i < len(w.b) && w.b[w.i] == c {
		w.i++
		return true
	}
	return false
}

func (w *walker) word(s string) bool {
	if len(w.b)-w.i >= len(s) && string(w.b[w.i:w.i+len(s)]) == s {
		w.i += len(s)
		return true
	}
	return false
}

// seq walks the comma-separated elements of an object or array, its opening byte read, up to
// and including end; elem walks one element.
func (w *walker) seq(end byte, elem func() bool) bool {
	if w.lit(end) {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if w.lit(end) {
			return true
		}
		if !w.lit(',') {
			return false
		}
	}
}

// PlainString finds the string token at b[i] when json.Unmarshal takes its content as it is:
// no escape, no control byte, valid UTF-8. start and end bound the content (b[end] is the
// closing quote); ok is false for any other token, which the caller decodes in full.
func PlainString(b []byte, i int) (start, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	start = i + 1
	ascii := true
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(b[start:j]) {
				return 0, 0, false
			}
			return start, j, true
		case c == '\\' || c < 0x20:
			return 0, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return 0, 0, false
}

// IsPlainToken says whether raw is exactly one string token PlainString takes.
func IsPlainToken(raw []byte) bool {
	_, end, ok := PlainString(raw, 0)
	return ok && end == len(raw)-1
}

// PlainToken decodes raw when it is exactly one string token PlainString takes, without
// encoding/json; ok is false for anything else, which the caller decodes in full.
func PlainToken(raw []byte) (s string, ok bool) {
	if !IsPlainToken(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

func (w *walker) value(depth int) bool {
	if depth >= compactDepth || w.i >= len(w.b) {
		return false
	}
	switch c := w.b[w.i]; {
	case c == '{':
		w.i++
		return w.seq('}', func() bool { return w.str() && w.lit(':') && w.value(depth+1) })
	case c == '[':
		w.i++
		return w.seq(']', func() bool { return w.value(depth + 1) })
	case c == '"':
		return w.str()
	case c == 't':
		return w.word("true")
	case c == 'f':
		return w.word("false")
	case c == 'n':
		return w.word("null")
	}
	return w.number()
}

// str walks a string, checking its escapes and control bytes.
func (w *walker) str() bool {
	if !w.lit('"') {
		return false
	}
	for j := w.i; j < len(w.b); j++ {
		switch c := w.b[j]; {
		case c == '"':
			w.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(w.b) {
				return false
			}
			switch w.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(w.b) {
					return false
				}
				for _, h := range w.b[j+1 : j+5] {
					if hexValue(h) < 0 {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

// number walks a number of the JSON grammar.
func (w *walker) number() bool {
	b, j := w.b, w.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		j = digitsEnd(b, j)
	default:
		return false
	}
	if j < len(b) && b[j] == '.' {
		k := digitsEnd(b, j+1)
		if k == j+1 {
			return false // a fraction needs a digit
		}
		j = k
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := digitsEnd(b, j)
		if k == j {
			return false // an exponent needs a digit
		}
		j = k
	}
	w.i = j
	return true
}
