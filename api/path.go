package api

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// routePath returns the path the router matches for ctx, built from the request's raw path
// (fasthttp's ctx.Path() is decoded and dot-segment collapsed: "/1.1/installations/..%2f..%2fmetrics"
// became "/metrics"). Each raw segment is percent-decoded on its own, so an encoded character
// can never become a separator. ok is false, and the request must be refused, when a segment
// holds an encoded separator (%2F, %5C), a backslash, or is a dot segment ("." or "..", raw
// or encoded): no route has one, and a proxy in front may resolve them differently.
func routePath(ctx *fasthttp.RequestCtx) (path []byte, ok bool) {
	raw := ctx.URI().PathOriginal()
	if len(raw) == 0 {
		return []byte("/"), true
	}
	if raw[0] != '/' {
		return nil, false // an absolute URI's path or "*": not a route
	}
	out := make([]byte, 0, len(raw))
	for len(raw) > 0 {
		raw = raw[1:] // the '/'
		seg := raw
		if i := bytes.IndexByte(raw, '/'); i >= 0 {
			seg, raw = raw[:i], raw[i:]
		} else {
			raw = nil
		}
		dec, ok := decodeSegment(seg)
		if !ok {
			return nil, false
		}
		out = append(out, '/')
		out = append(out, dec...)
	}
	return out, true
}

// decodeSegment percent-decodes one path segment; ok is false for a segment the router
// refuses (see routePath). A '%' not followed by two hex digits stays as it is.
func decodeSegment(seg []byte) ([]byte, bool) {
	if bytes.IndexByte(seg, '%') < 0 && bytes.IndexByte(seg, '\\') < 0 {
		if string(seg) == "." || string(seg) == ".." {
			return nil, false
		}
		return seg, true
	}
	dec := make([]byte, 0, len(seg))
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c == '%' && i+2 < len(seg) && unhex(seg[i+1]) >= 0 && unhex(seg[i+2]) >= 0 {
			c = byte(unhex(seg[i+1])<<4 | unhex(seg[i+2]))
			i += 2
		}
		if c == '/' || c == '\\' {
			return nil, false
		}
		dec = append(dec, c)
	}
	if string(dec) == "." || string(dec) == ".." {
		return nil, false
	}
	return dec, true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
