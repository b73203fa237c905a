package h2

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// FuzzFrameReaderMatchesFramer reads the same bytes with frameReader and with x/net's Framer
// alone: every frame both read is the same frame (type, flags, stream, length, fragment or
// data), and where one fails the other does too, with the same stream error if it is one. The
// connection errors may differ: frameReader checks a frame's header before reading its payload
// (a HEADERS frame on stream 0 cut short is a PROTOCOL_ERROR, not an EOF), and it makes padding
// longer than a HEADERS frame's payload a connection error, as RFC 9113 §6.2 says, where the
// Framer makes it a stream error; both stop there.
func FuzzFrameReaderMatchesFramer(f *testing.F) {
	f.Add(serverFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(":status", "200"), EndHeaders: true, EndStream: true})
		b := enc(":status", "410", "retry-after", "5")
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: b[:2], PadLength: 7,
			Priority: http2.PriorityParam{StreamDep: 1, Weight: 9, Exclusive: true}})
		_ = fr.WriteContinuation(3, true, b[2:])
		_ = fr.WriteDataPadded(3, false, []byte(`{"reason":`), make([]byte, 5))
		_ = fr.WriteData(3, true, []byte(`"Unregistered"}`))
		_ = fr.WritePing(false, [8]byte{1})
		_ = fr.WriteRSTStream(5, http2.ErrCodeRefusedStream)
		_ = fr.WriteWindowUpdate(0, 1<<20)
		_ = fr.WriteGoAway(3, http2.ErrCodeNo, []byte("bye"))
	}))
	f.Add(serverFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(":status", "200")})
		_ = fr.WritePing(false, [8]byte{2}) // inside a header block
	}))
	f.Add(serverFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteContinuation(1, true, enc(":status", "200")) // no header block open
	}))
	f.Add(serverFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteData(1, true, bytes.Repeat([]byte("x"), maxReadFrame))
		_ = fr.WriteWindowUpdate(1, 0) // a stream error: both read on
		_ = fr.WriteData(3, true, nil)
	}))
	f.Add([]byte{0, 0, 1, 1, 0x8, 0, 0, 0, 1, 2})            // HEADERS padded past its payload
	f.Add([]byte{0, 0, 3, 0, 0x8, 0, 0, 0, 1, 3, 'a', 'b'})  // DATA padded past its payload
	f.Add([]byte{0, 0x40, 1, 0, 0, 0, 0, 0, 1})              // DATA larger than we accept
	f.Add([]byte{0, 0, 4, 1, 0x24, 0, 0, 0, 1, 0, 0, 0, 0})  // HEADERS with priority cut short
	f.Add([]byte{0, 0, 2, 0, 1, 0, 0, 0, 0, 'h', 'i', 0, 0}) // DATA on stream 0, then a cut header
	f.Fuzz(func(t *testing.T, data []byte) {
		ref := http2.NewFramer(io.Discard, bytes.NewReader(data))
		ref.SetMaxReadFrameSize(maxReadFrame)
		br := bufio.NewReaderSize(bytes.NewReader(data), readBufSize)
		fr := http2.NewFramer(io.Discard, br)
		fr.SetMaxReadFrameSize(maxReadFrame)
		r := frameReader{br: br, fr: fr}
		for n := 0; ; n++ {
			want, werr := ref.ReadFrame()
			in, got, gerr := r.next()
			if werr != nil || gerr != nil {
				var wse, gse http2.StreamError
				switch {
				case werr == nil || gerr == nil:
					t.Fatalf("frame %d: the Framer read %v (%v), frameReader %v %v (%v)", n, want, werr, in.typ, got, gerr)
				case errors.As(werr, &wse) && errors.As(gerr, &gse):
					if wse.StreamID != gse.StreamID || wse.Code != gse.Code {
						t.Fatalf("frame %d: stream errors %v and %v", n, wse, gse)
					}
					continue // a stream error: both read on
				}
				return
			}
			wh := want.Header()
			if got != nil {
				if gh := got.Header(); gh.Type != wh.Type || gh.Flags != wh.Flags || gh.StreamID != wh.StreamID || gh.Length != wh.Length {
					t.Fatalf("frame %d: the Framer read %v, frameReader's Framer %v", n, wh, gh)
				}
				continue
			}
			var wantData []byte
			switch w := want.(type) {
			case *http2.HeadersFrame:
				wantData = w.HeaderBlockFragment()
			case *http2.ContinuationFrame:
				wantData = w.HeaderBlockFragment()
			case *http2.DataFrame:
				wantData = w.Data()
			default:
				t.Fatalf("frame %d: frameReader parsed a %v itself", n, wh.Type)
			}
			if in.typ != wh.Type || in.flags != wh.Flags || in.id != wh.StreamID || in.length != int(wh.Length) || !bytes.Equal(in.data, wantData) {
				t.Fatalf("frame %d: the Framer read %v %q, frameReader %v flags %v stream %d length %d %q",
					n, wh, wantData, in.typ, in.flags, in.id, in.length, in.data)
			}
		}
	})
}

// An answer in every shape the server may give it: a padded HEADERS frame with a priority,
// its block continued in a CONTINUATION frame, a padded DATA frame and one more; then a
// 100-continue before the final answer of another stream.
func TestH2RawPaddedPriorityContinuationAnswer(t *testing.T) {
	c, s := startRaw(t, Config{})
	ch := goDo(c, "padded")
	r := s.request()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "410"})
	_ = enc.WriteField(hpack.HeaderField{Name: "retry-after", Value: "42"})
	_ = enc.WriteField(hpack.HeaderField{Name: "apns-id", Value: strings.Repeat("i", 40)})
	b := hb.Bytes()
	s.mu.Lock()
	_ = s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: r.id, BlockFragment: b[:3], PadLength: 200,
		Priority: http2.PriorityParam{StreamDep: 0, Weight: 200}})
	_ = s.fr.WriteContinuation(r.id, true, b[3:])
	_ = s.fr.WriteDataPadded(r.id, false, []byte(`{"reason":`), make([]byte, 30))
	_ = s.fr.WriteDataPadded(r.id, true, []byte(`"Unregistered"}`), nil)
	s.mu.Unlock()
	res := <-ch
	if res.err != nil || res.res.Status != 410 || res.res.RetryAfter != "42" || string(res.res.Body) != `{"reason":"Unregistered"}` {
		t.Fatalf("got %d retry-after %q body %q (%v)", res.res.Status, res.res.RetryAfter, res.res.Body, res.err)
	}

	ch = goDo(c, "continue")
	r = s.request()
	s.mu.Lock()
	hb.Reset()
	_ = enc.WriteField(hpack.HeaderField{Name: ":status", Value: "100"})
	_ = s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: r.id, BlockFragment: hb.Bytes(), EndHeaders: true, PadLength: 1})
	s.mu.Unlock()
	s.respond(r.id, 200, "")
	if res := <-ch; res.err != nil || res.res.Status != 200 {
		t.Fatalf("got %d (%v), want 200", res.res.Status, res.err)
	}
}
