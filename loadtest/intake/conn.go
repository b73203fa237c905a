package intake

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
)

// Conn is one keep-alive HTTP/1.1 connection of the generator's client, written and read by
// hand. The api package's upsert benchmark uses it too, so both measure with the same client.
type Conn struct {
	nc   net.Conn
	r    *bufio.Reader
	body []byte
}

// NewConn wraps nc, a connection to the server under test.
func NewConn(nc net.Conn) *Conn {
	return &Conn{nc: nc, r: bufio.NewReaderSize(nc, 4096)}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// RoundTrip writes req and reads one response: its status code and body. It refuses a
// response it does not understand (chunked bodies, no Content-Length, a closing connection),
// which neither pushd nor the floor sends to these requests. The body is valid until the
// next RoundTrip.
func (c *Conn) RoundTrip(req []byte) (int, []byte, error) {
	if _, err := c.nc.Write(req); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, fmt.Errorf("cannot read a status line: %w", err)
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, fmt.Errorf("not an HTTP/1.1 status line: %q", line)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length := -1
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, fmt.Errorf("cannot read a header: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, nil, fmt.Errorf("bad header %q", line)
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil || length < 0 {
				return 0, nil, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")),
			bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(bytes.TrimSpace(value), []byte("close")):
			return 0, nil, fmt.Errorf("unexpected header %q", line)
		}
	}
	if length < 0 {
		return 0, nil, fmt.Errorf("status %d without Content-Length", code)
	}
	c.body = slices.Grow(c.body[:0], length)[:length]
	if _, err := io.ReadFull(c.r, c.body); err != nil {
		return 0, nil, fmt.Errorf("cannot read a body: %w", err)
	}
	return code, c.body, nil
}
