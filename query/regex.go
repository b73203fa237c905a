package query

import (
	"regexp"
	"strings"
)

// compileRegex compiles a $regex pattern with its $options for Go's RE2 engine, which keeps
// matching linear in the input. Perl's \Q...\E quoting is rewritten into escapes, and the x
// option is emulated by dropping unescaped whitespace and #-comments outside classes.
func compileRegex(pattern, options, field string) (*regexp.Regexp, error) {
	if len(pattern) > MaxRegexLen {
		return nil, errQuery("$regex on field %q: pattern longer than %d bytes", field, MaxRegexLen)
	}
	var flags []byte
	extended := false
	for i := 0; i < len(options); i++ {
		switch c := options[i]; c {
		case 'i', 'm', 's':
			if !strings.ContainsRune(string(flags), rune(c)) {
				flags = append(flags, c)
			}
		case 'x':
			extended = true
		default:
			return nil, errQuery("$options on field %q: unsupported option %q (allowed: i, m, s, x)", field, string(rune(c)))
		}
	}
	expr := translateRegex(pattern, extended)
	if len(flags) > 0 {
		expr = "(?" + string(flags) + ")" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, errQuery("$regex on field %q: %s", field, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return re, nil
}

// translateRegex rewrites \Q...\E quoting and, when extended, strips x-mode whitespace
// and comments. Everything else passes through for the RE2 parser to judge.
func translateRegex(pat string, extended bool) string {
	if !extended && !strings.Contains(pat, `\Q`) && !strings.Contains(pat, `\E`) {
		return pat
	}
	var b strings.Builder
	b.Grow(len(pat) + 8)
	inClass := false
	for i := 0; i < len(pat); {
		c := pat[i]
		if c == '\\' && i+1 < len(pat) {
			switch pat[i+1] {
			case 'Q':
				lit := pat[i+2:]
				if end := strings.Index(lit, `\E`); end >= 0 {
					lit = lit[:end]
					i += 2 + end + 2
				} else {
					i = len(pat)
				}
				quoteLiteral(&b, lit)
			case 'E': // a stray \E ends nothing: Perl ignores it
				i += 2
			default:
				b.WriteByte(c)
				b.WriteByte(pat[i+1])
				i += 2
			}
			continue
		}
		if inClass {
			if c == '[' && i+1 < len(pat) && pat[i+1] == ':' {
				if end := strings.Index(pat[i+2:], ":]"); end >= 0 {
					b.WriteString(pat[i : i+2+end+2])
					i += 2 + end + 2
					continue
				}
			}
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
			i++
			continue
		}
		if c == '[' {
			inClass = true
			b.WriteByte(c)
			i++
			if i < len(pat) && pat[i] == '^' {
				b.WriteByte('^')
				i++
			}
			if i < len(pat) && pat[i] == ']' {
				b.WriteByte(']')
				i++
			}
			continue
		}
		if extended {
			switch c {
			case ' ', '\t', '\n', '\r', '\f', '\v':
				i++
				continue
			case '#':
				for i < len(pat) && pat[i] != '\n' {
					i++
				}
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// quoteLiteral writes s so that it matches itself, inside or outside a character class:
// every ASCII punctuation byte is escaped (RE2 accepts escaped punctuation anywhere).
func quoteLiteral(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x80 && !isAlnum(c) && c != ' ' && c >= 0x21 && c != 0x7f {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
