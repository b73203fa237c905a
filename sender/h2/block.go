package h2

import (
	"bytes"

	"golang.org/x/net/http2/hpack"
)

// BlockEncoder encodes header fields with hpack but never into the dynamic table (static
// indexes, literals without indexing), so a block it builds is valid on any stream of any
// connection and can be encoded once and reused. Not safe for concurrent use.
type BlockEncoder struct {
	buf bytes.Buffer
	enc *hpack.Encoder
}

// NewBlockEncoder returns an encoder that never indexes.
func NewBlockEncoder() *BlockEncoder {
	e := &BlockEncoder{}
	e.enc = hpack.NewEncoder(&e.buf)
	// A zero limit turns indexing off; the table-size update it queues goes out with the first
	// field, which is thrown away: the peer's table stays as it is and is never referenced.
	e.enc.SetMaxDynamicTableSizeLimit(0)
	_ = e.enc.WriteField(hpack.HeaderField{Name: "x"})
	e.buf.Reset()
	return e
}

// Append appends the encoding of one field to dst.
func (e *BlockEncoder) Append(dst []byte, name, value string) []byte {
	e.buf.Reset()
	_ = e.enc.WriteField(hpack.HeaderField{Name: name, Value: value}) // writes to a bytes.Buffer: no error
	return append(dst, e.buf.Bytes()...)
}
