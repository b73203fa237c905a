package h2

import (
	"bufio"
	"encoding/binary"
	"io"

	"golang.org/x/net/http2"
)

const (
	frameHeaderLen = 9
	// maxReadFrame is the largest frame payload we accept: SETTINGS_MAX_FRAME_SIZE, which we
	// leave at its default.
	maxReadFrame = 16384
	// readBufSize holds a whole frame of maxReadFrame, so that one is parsed in place.
	readBufSize = 32 << 10
)

// inFrame is a HEADERS, CONTINUATION or DATA frame that frameReader parsed in place in its
// read buffer: data is valid until the next call of next.
type inFrame struct {
	typ    http2.FrameType
	flags  http2.Flags
	id     uint32
	length int    // the payload's length, padding included (flow control counts it)
	data   []byte // the header block fragment, or the data, without padding
}

// frameReader reads the server's frames. The frames of every answer (HEADERS, CONTINUATION,
// DATA) it parses itself, in place in br's buffer: x/net's Framer allocates a HeadersFrame
// for each, that is one allocation per delivery. Every other frame it leaves to fr, which
// reads from the same br; since fr never sees a header block, frameReader checks that a
// header block's frames are contiguous (RFC 9113 §6.10) for every frame, fr's included.
type frameReader struct {
	br      *bufio.Reader // of at least readBufSize
	fr      *http2.Framer // reading from br
	pending int           // bytes of the last in-place frame, discarded at the next call
	block   uint32        // the stream whose header block is open (0: none)
}

// next reads the next frame: f when fr parsed it, else in. A header block's order, a frame's
// size and its padding break the connection (http2.ConnectionError); fr's errors are its own.
func (r *frameReader) next() (in inFrame, f http2.Frame, err error) {
	if r.pending > 0 {
		_, _ = r.br.Discard(r.pending) // buffered: Peek returned them
		r.pending = 0
	}
	hdr, err := r.br.Peek(frameHeaderLen)
	if err != nil {
		if err == io.EOF && r.br.Buffered() > 0 {
			err = io.ErrUnexpectedEOF // a frame header cut short, as io.ReadFull says it
		}
		return in, nil, err
	}
	in.length = int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	in.typ, in.flags = http2.FrameType(hdr[3]), http2.Flags(hdr[4])
	in.id = binary.BigEndian.Uint32(hdr[5:]) & maxStreamID
	if r.block != 0 && (in.typ != http2.FrameContinuation || in.id != r.block) ||
		r.block == 0 && in.typ == http2.FrameContinuation {
		return in, nil, http2.ConnectionError(http2.ErrCodeProtocol)
	}
	switch in.typ {
	case http2.FrameHeaders, http2.FrameContinuation, http2.FrameData:
	default:
		f, err = r.fr.ReadFrame()
		return in, f, err
	}
	if in.length > maxReadFrame {
		return in, nil, http2.ConnectionError(http2.ErrCodeFrameSize)
	}
	if in.id == 0 {
		return in, nil, http2.ConnectionError(http2.ErrCodeProtocol)
	}
	b, err := r.br.Peek(frameHeaderLen + in.length)
	if err != nil {
		if err == io.EOF && r.br.Buffered() > frameHeaderLen {
			err = io.ErrUnexpectedEOF // as io.ReadFull says a payload cut short
		}
		return in, nil, err
	}
	r.pending = len(b)
	p := b[frameHeaderLen:]
	pad := 0
	if in.typ != http2.FrameContinuation && in.flags.Has(http2.FlagDataPadded) { // HEADERS' PADDED is the same bit
		if len(p) == 0 {
			return in, nil, http2.ConnectionError(http2.ErrCodeFrameSize)
		}
		pad, p = int(p[0]), p[1:]
	}
	if in.typ == http2.FrameHeaders && in.flags.Has(http2.FlagHeadersPriority) {
		if len(p) < 5 {
			return in, nil, http2.ConnectionError(http2.ErrCodeFrameSize)
		}
		p = p[5:] // the stream dependency and weight: nothing to a client
	}
	// Padding as long as the payload or longer: a connection error (RFC 9113 §6.1, §6.2).
	if pad > len(p) {
		return in, nil, http2.ConnectionError(http2.ErrCodeProtocol)
	}
	in.data = p[:len(p)-pad]
	switch {
	case in.typ == http2.FrameData:
	case in.flags.Has(http2.FlagHeadersEndHeaders): // CONTINUATION's END_HEADERS is the same bit
		r.block = 0
	default:
		r.block = in.id
	}
	return in, nil, nil
}
