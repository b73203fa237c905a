package jsondoc

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// nativeDepth bounds how deep maps and slices are encoded here. encoding/json starts looking for
// reference cycles past 1000 nested maps/slices (startDetectingCyclesAfter); a subtree deeper
// than that is handed to json.Marshal, which writes the same bytes or finds the cycle, so a
// self-referencing map is an error here too instead of a stack overflow.
const nativeDepth = 1000

// AppendMarshal appends the encoding of v to dst exactly as json.Marshal(v) would produce it.
// On error it returns dst with its original length and the error.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	sp := getScratch()
	e := encoder{entries: *sp}
	b, err := e.value(dst, v, 0)
	putScratch(sp, e.entries)
	if err != nil {
		return dst, err
	}
	return b, nil
}

// encoder keeps one scratch slice of map entries shared by all nesting levels: each map uses
// the tail it appended and truncates it when done.
type encoder struct {
	entries []entry
}

type entry = member

func (e *encoder) value(b []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return AppendString(b, v), nil
	case float64:
		return appendFloat(b, v)
	case bool:
		return strconv.AppendBool(b, v), nil
	case map[string]any:
		if v == nil {
			return append(b, "null"...), nil
		}
		if depth >= nativeDepth {
			return appendFallback(b, v)
		}
		return e.object(b, v, depth)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		if depth >= nativeDepth {
			return appendFallback(b, v)
		}
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = e.value(b, x, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	default:
		return appendFallback(b, v)
	}
}

func (e *encoder) object(b []byte, m map[string]any, depth int) ([]byte, error) {
	start := len(e.entries)
	for k, x := range m {
		e.entries = append(e.entries, entry{k, x})
	}
	// Nested maps may grow e.entries into a new array; this level keeps reading its own
	// (unchanged) entries through kvs.
	kvs := e.entries[start:]
	slices.SortFunc(kvs, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	b = append(b, '{')
	for i := range kvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, kvs[i].key)
		b = append(b, ':')
		var err error
		if b, err = e.value(b, kvs[i].val, depth+1); err != nil {
			return b, err
		}
	}
	clear(kvs) // drop references so a reused scratch slice does not pin values
	e.entries = e.entries[:start]
	return append(b, '}'), nil
}

// appendFallback encodes a value of any other type with json.Marshal, which already compacts
// Marshaler output and escapes HTML the same way json.Marshal of the whole document would.
func appendFallback(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return b, fmt.Errorf("cannot encode JSON value of type %T: %w", v, err)
	}
	return append(b, out...), nil
}

// appendFloat is encoding/json's floatEncoder for 64 bits: ES6 number formatting, 'e' below
// 1e-6 and from 1e21, with e-07 cleaned up to e-7.
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("cannot encode JSON: unsupported value %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	abs := math.Abs(f)
	if f != 0 && abs < 1e15 && f == math.Trunc(f) {
		// An integer below 2^53 prints the same digits with either function, faster here.
		return strconv.AppendInt(b, int64(f), 10), nil
	}
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hex = "0123456789abcdef"

// htmlSafe is encoding/json's htmlSafeSet: the ASCII bytes written as they are when HTML
// escaping is on (json.Marshal always has it on).
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := byte(0x20); c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as a JSON string exactly as json.Marshal(s) writes it (encoding/json's
// appendString with escapeHTML set).
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control bytes and < > &
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
