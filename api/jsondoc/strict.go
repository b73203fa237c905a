package jsondoc

import (
	"fmt"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// StrictMaxDepth is the depth limit of CheckStrict for the API's request bodies: the limit
// custom installation values always had (a member of the body has depth 0), which push bodies
// share. No real payload nests this deep; the limit bounds the work of every later pass.
const StrictMaxDepth = 32

// Keys a strict document may not hold at any depth: JavaScript consumers of a stored or
// forwarded document (SDKs, dashboards, the gateways' own servers) treat them as the object's
// prototype, so a client could reach past its own data.
var forbiddenKeys = [...]string{"__proto__", "constructor"}

// CheckStrict reports the first construct of the JSON text b that a strict reader refuses
// although encoding/json (and Decode) accept it, or a syntax error:
//
//   - a key that appears twice in one object (compared after unescaping, so "a" and "\u0061"
//     are the same key): encoding/json keeps the last one, a JavaScript reader too, other
//     readers the first, so the two sides of an API would disagree on what was sent;
//   - a string, key or value, that is not valid UTF-8, or holds an escaped lone surrogate
//     (\ud800 not followed by a low surrogate, or a lone \udc00): Decode turns both into
//     U+FFFD silently;
//   - a value nested deeper than maxDepth: the members of the top-level value have depth 0,
//     and a value inside a value of depth d has depth d+1 (the installation rule for custom
//     fields);
//   - a key named __proto__ or constructor, at any depth.
//
// The error is a *StrictError. CheckStrict allocates only for objects of more than 16 keys and
// for long keys.
func CheckStrict(b []byte, maxDepth int) error {
	bufs := strictPool.Get().(*strictBufs)
	defer strictPool.Put(bufs)
	c := strictChecker{data: b, maxDepth: maxDepth, key: bufs.key[:0], arena: bufs.arena[:0]}
	c.skipSpace()
	if err := c.value(-1); err != nil {
		return err
	}
	c.skipSpace()
	if c.off < len(c.data) {
		return c.fail("invalid character %s after top-level value", describe(c.data[c.off]))
	}
	return nil
}

// strictBufs are a check's scratch buffers, pooled: on the stack they escaped (the checker's
// methods keep slices of them), 512 bytes of garbage per checked request body.
type strictBufs struct{ key, arena [256]byte }

var strictPool = sync.Pool{New: func() any { return new(strictBufs) }}

// StrictError is a CheckStrict refusal; its text names the rule and the byte offset.
type StrictError struct {
	Offset int
	Reason string
}

func (e *StrictError) Error() string {
	return fmt.Sprintf("%s at offset %d", e.Reason, e.Offset)
}

type strictChecker struct {
	data     []byte
	off      int
	maxDepth int
	key      []byte // scratch: the unescaped key being read
	arena    []byte // keys of the open small objects, innermost last
}

func (c *strictChecker) fail(format string, args ...any) *StrictError {
	return &StrictError{Offset: c.off, Reason: fmt.Sprintf(format, args...)}
}

func (c *strictChecker) skipSpace() {
	for c.off < len(c.data) {
		switch c.data[c.off] {
		case ' ', '\t', '\n', '\r':
			c.off++
		default:
			return
		}
	}
}

// value checks the value at c.off, whose depth is depth (-1 for the top-level value).
func (c *strictChecker) value(depth int) error {
	if depth > c.maxDepth {
		return c.fail("a value is nested deeper than %d levels", c.maxDepth)
	}
	if c.off >= len(c.data) {
		return c.fail("unexpected end of input")
	}
	switch ch := c.data[c.off]; {
	case ch == '{':
		return c.object(depth)
	case ch == '[':
		return c.array(depth)
	case ch == '"':
		_, err := c.str(false)
		return err
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || isDigit(ch):
		return c.number()
	default:
		return c.fail("invalid character %s looking for beginning of value", describe(ch))
	}
}

// smallObject is how many keys an object may have before duplicates are found with a map
// instead of comparing against each earlier key (quadratic, but cheaper and allocation-free
// for few keys).
const smallObject = 16

func (c *strictChecker) object(depth int) error {
	c.off++ // '{'
	c.skipSpace()
	if c.off < len(c.data) && c.data[c.off] == '}' {
		c.off++
		return nil
	}
	// The keys of a small object sit in c.arena, which nested objects extend and give back.
	base := len(c.arena)
	defer func() { c.arena = c.arena[:base] }()
	var small [smallObject][2]int // start and end of each key in c.arena
	nkeys := 0
	var many map[string]struct{}
	for {
		if c.off >= len(c.data) || c.data[c.off] != '"' {
			return c.fail("object key string expected")
		}
		start := c.off
		k, err := c.str(true)
		if err != nil {
			return err
		}
		for _, f := range forbiddenKeys {
			if string(k) == f {
				c.off = start
				return c.fail("the key %q is not allowed", f)
			}
		}
		dup := false
		switch {
		case many != nil:
			_, dup = many[string(k)]
			many[string(k)] = struct{}{}
		default:
			for _, sp := range small[:nkeys] {
				if string(c.arena[sp[0]:sp[1]]) == string(k) {
					dup = true
					break
				}
			}
			if dup {
				break
			}
			if nkeys < smallObject {
				small[nkeys] = [2]int{len(c.arena), len(c.arena) + len(k)}
				c.arena = append(c.arena, k...)
				nkeys++
				break
			}
			many = make(map[string]struct{}, 4*smallObject)
			for _, sp := range small[:nkeys] {
				many[string(c.arena[sp[0]:sp[1]])] = struct{}{}
			}
			many[string(k)] = struct{}{}
		}
		if dup {
			c.off = start
			return c.fail("duplicate key %s", quoteShort(k))
		}
		c.skipSpace()
		if c.off >= len(c.data) || c.data[c.off] != ':' {
			return c.fail("':' expected after object key")
		}
		c.off++
		c.skipSpace()
		if err := c.value(depth + 1); err != nil {
			return err
		}
		c.skipSpace()
		if c.off >= len(c.data) {
			return c.fail("unexpected end of input")
		}
		switch c.data[c.off] {
		case ',':
			c.off++
			c.skipSpace()
		case '}':
			c.off++
			return nil
		default:
			return c.fail("invalid character %s after object key:value pair", describe(c.data[c.off]))
		}
	}
}

func (c *strictChecker) array(depth int) error {
	c.off++ // '['
	c.skipSpace()
	if c.off < len(c.data) && c.data[c.off] == ']' {
		c.off++
		return nil
	}
	for {
		if err := c.value(depth + 1); err != nil {
			return err
		}
		c.skipSpace()
		if c.off >= len(c.data) {
			return c.fail("unexpected end of input")
		}
		switch c.data[c.off] {
		case ',':
			c.off++
			c.skipSpace()
		case ']':
			c.off++
			return nil
		default:
			return c.fail("invalid character %s after array element", describe(c.data[c.off]))
		}
	}
}

// str checks the string at c.off. When keep is set it returns the unescaped string (valid
// until the next call).
func (c *strictChecker) str(keep bool) ([]byte, error) {
	c.off++ // '"'
	c.key = c.key[:0]
	for c.off < len(c.data) {
		ch := c.data[c.off]
		switch {
		case ch == '"':
			c.off++
			return c.key, nil
		case ch < 0x20:
			return nil, c.fail("invalid character %s in string literal", describe(ch))
		case ch == '\\':
			r, err := c.escape()
			if err != nil {
				return nil, err
			}
			if keep {
				c.key = utf8.AppendRune(c.key, r)
			}
		case ch < utf8.RuneSelf:
			if keep {
				c.key = append(c.key, ch)
			}
			c.off++
		default:
			r, size := utf8.DecodeRune(c.data[c.off:])
			if r == utf8.RuneError && size <= 1 {
				return nil, c.fail("a string holds invalid UTF-8")
			}
			if keep {
				c.key = append(c.key, c.data[c.off:c.off+size]...)
			}
			c.off += size
		}
	}
	return nil, c.fail("unexpected end of input")
}

// escape reads the escape at c.off (a backslash) and returns the character it stands for; a
// surrogate pair's two escapes are read together.
func (c *strictChecker) escape() (rune, error) {
	if c.off+1 >= len(c.data) {
		return 0, c.fail("unexpected end of input")
	}
	switch e := c.data[c.off+1]; e {
	case '"', '\\', '/':
		c.off += 2
		return rune(e), nil
	case 'b':
		c.off += 2
		return '\b', nil
	case 'f':
		c.off += 2
		return '\f', nil
	case 'n':
		c.off += 2
		return '\n', nil
	case 'r':
		c.off += 2
		return '\r', nil
	case 't':
		c.off += 2
		return '\t', nil
	case 'u':
		r := getu4(c.data[c.off:])
		if r < 0 {
			return 0, c.fail("invalid \\u escape")
		}
		if !utf16.IsSurrogate(r) {
			c.off += 6
			return r, nil
		}
		if r < 0xdc00 { // a high surrogate must be followed by a low one
			if lo := getu4(c.data[c.off+6:]); 0xdc00 <= lo && lo < 0xe000 {
				c.off += 12
				return utf16.DecodeRune(r, lo), nil
			}
		}
		return 0, c.fail("a string holds a lone surrogate \\u%04x", r)
	default:
		return 0, c.fail("invalid character %s in string escape code", describe(e))
	}
}

func (c *strictChecker) literal(word string) error {
	if len(c.data)-c.off < len(word) || string(c.data[c.off:c.off+len(word)]) != word {
		return c.fail("invalid literal, %s expected", word)
	}
	c.off += len(word)
	return nil
}

// number checks a number by the JSON grammar; its range is Decode's business.
func (c *strictChecker) number() error {
	i := c.off
	if c.data[i] == '-' {
		i++
	}
	switch {
	case i < len(c.data) && c.data[i] == '0':
		i++
	case i < len(c.data) && '1' <= c.data[i] && c.data[i] <= '9':
		for i < len(c.data) && isDigit(c.data[i]) {
			i++
		}
	default:
		c.off = i
		return c.fail("invalid numeric literal")
	}
	if i < len(c.data) && c.data[i] == '.' {
		i++
		if i >= len(c.data) || !isDigit(c.data[i]) {
			c.off = i
			return c.fail("invalid numeric literal")
		}
		for i < len(c.data) && isDigit(c.data[i]) {
			i++
		}
	}
	if i < len(c.data) && (c.data[i] == 'e' || c.data[i] == 'E') {
		i++
		if i < len(c.data) && (c.data[i] == '+' || c.data[i] == '-') {
			i++
		}
		if i >= len(c.data) || !isDigit(c.data[i]) {
			c.off = i
			return c.fail("invalid numeric literal")
		}
		for i < len(c.data) && isDigit(c.data[i]) {
			i++
		}
	}
	c.off = i
	return nil
}

// quoteShort quotes a key for an error message, cut to 64 bytes.
func quoteShort(k []byte) string {
	if len(k) > 64 {
		return strconv.Quote(string(k[:64])) + "..."
	}
	return strconv.Quote(string(k))
}
