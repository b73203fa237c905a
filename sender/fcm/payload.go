package fcm

import (
	"encoding/json"
	"errors"
	"sync"
)

var errBodyNotObject = errors.New("fcm message body is not a JSON object")

// appendMessage appends the send request {"message":{"token":<tok>, ...body}} to dst, where
// body is the message object rendered once per push without its target: the token is spliced
// in as the first member, the rendered bytes are copied as they are.
func appendMessage(dst []byte, tok string, body []byte) ([]byte, error) {
	i := skipSpace(body, 0)
	if len(body) == 0 {
		body, i = []byte("{}"), 0
	}
	if i >= len(body) || body[i] != '{' {
		return dst, errBodyNotObject
	}
	dst = append(dst, `{"message":{"token":`...)
	dst = appendString(dst, tok)
	rest := body[i+1:]
	if j := skipSpace(rest, 0); j < len(rest) && rest[j] != '}' {
		dst = append(dst, ',')
	}
	dst = append(dst, rest...)
	return append(dst, '}'), nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// appendString appends s as a JSON string. Registration tokens are plain ASCII; anything else
// takes the encoding/json path.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// bufs holds send request buffers between deliveries.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}
