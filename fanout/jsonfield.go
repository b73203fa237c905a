package fanout

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// topField returns the raw JSON value of the top-level key name of the JSON object doc,
// without decoding anything else: the residual filter reads one or two document fields per
// row, and a full decode into a map costs ten times the scan. ok is false when the key is
// absent or doc is not a well-formed object up to that key.
func topField(doc []byte, name string) (val []byte, ok bool) {
	i := skipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipWS(doc, i)
		if i >= len(doc) || doc[i] != '"' {
			return nil, false // '}' (end) or malformed
		}
		kEnd, esc := scanString(doc, i)
		if kEnd < 0 {
			return nil, false
		}
		key := doc[i+1 : kEnd-1]
		i = skipWS(doc, kEnd)
		if i >= len(doc) || doc[i] != ':' {
			return nil, false
		}
		i = skipWS(doc, i+1)
		vEnd := skipValue(doc, i)
		if vEnd < 0 {
			return nil, false
		}
		if keyIs(key, esc, name) {
			return doc[i:vEnd], true
		}
		i = skipWS(doc, vEnd)
		if i >= len(doc) || doc[i] != ',' {
			return nil, false
		}
		i++
	}
}

func keyIs(key []byte, escaped bool, name string) bool {
	if !escaped {
		return string(key) == name
	}
	var k string
	q := make([]byte, 0, len(key)+2)
	q = append(append(append(q, '"'), key...), '"')
	return json.Unmarshal(q, &k) == nil && k == name
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the string starting at b[i] == '"', and whether it has
// escapes; -1 when unterminated.
func scanString(b []byte, i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			esc = true
			j++
		case '"':
			return j + 1, esc
		}
	}
	return -1, false
}

// skipValue returns the index after the value starting at b[i]; -1 when malformed.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := scanString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := scanString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[j])) {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// decodeValue turns a raw JSON value into what encoding/json decodes into any. Strings
// without escapes and numbers are boxed into d's slots without allocating; they are valid
// until the next row (the doc aliases the store's buffer).
func (d *rowDoc) decodeValue(v []byte) (any, bool) {
	switch v[0] {
	case '"':
		end, esc := scanString(v, 0)
		if end != len(v) {
			return nil, false
		}
		// Without escapes the bytes are the string, unless they are not UTF-8: encoding/json
		// (and so the document's other readers) turns each bad byte into U+FFFD.
		if s := v[1 : len(v)-1]; !esc && utf8.Valid(s) {
			if len(s) == 0 {
				return "", true
			}
			d.docNext++
			return box(&d.docStrs[d.docNext%4], unsafe.String(&s[0], len(s))), true
		}
	case 't':
		if string(v) == "true" {
			return true, true
		}
		return nil, false
	case 'f':
		if string(v) == "false" {
			return false, true
		}
		return nil, false
	case 'n':
		if string(v) == "null" {
			return nil, true
		}
		return nil, false
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := strconv.ParseFloat(unsafe.String(&v[0], len(v)), 64)
		if err != nil {
			return nil, false
		}
		d.docNext++
		return boxFloat(&d.docNums[d.docNext%4], f), true
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return nil, false
	}
	return x, true
}
