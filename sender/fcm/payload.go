package fcm

import (
	"encoding/json"
	"errors"
	"io"
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

// payload is one send request in a pooled buffer, read by the request body and by every body
// the transport asks GetBody for to replay a stream the server refused before reading it. The
// transport closes each body when done with it, possibly after RoundTrip returned and possibly
// while another goroutine still reads it; the mutex makes Read and Close exclusive, and the
// buffer goes back to the pool once, after Send and every body released it.
type payload struct {
	mu   sync.Mutex
	buf  *[]byte // nil once every reference is released
	refs int     // Send's own plus one per open body
}

var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func newPayload() *payload { return &payload{buf: bufs.Get().(*[]byte), refs: 1} }

// body returns a new reader of the whole request; its Close releases its reference.
func (p *payload) body() io.ReadCloser {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.buf == nil {
		panic("BUG: fcm request body made after its payload was released")
	}
	p.refs++
	return &body{p: p}
}

// getBody is the request's GetBody.
func (p *payload) getBody() (io.ReadCloser, error) { return p.body(), nil }

// release drops Send's reference.
func (p *payload) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releaseLocked()
}

func (p *payload) releaseLocked() {
	p.refs--
	if p.refs > 0 {
		return
	}
	if cap(*p.buf) <= 64<<10 {
		*p.buf = (*p.buf)[:0]
		bufs.Put(p.buf)
	}
	p.buf = nil
}

type body struct {
	p      *payload
	off    int  // guarded by p.mu
	closed bool // guarded by p.mu
}

func (b *body) Read(q []byte) (int, error) {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	if b.closed {
		return 0, errBodyClosed
	}
	buf := *b.p.buf
	if b.off >= len(buf) {
		return 0, io.EOF
	}
	n := copy(q, buf[b.off:])
	b.off += n
	return n, nil
}

func (b *body) Close() error {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	if !b.closed {
		b.closed = true
		b.p.releaseLocked()
	}
	return nil
}

var errBodyClosed = errors.New("request body closed")
