package h2

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// serverFrames encodes frames as a server would send them.
func serverFrames(write func(fr *http2.Framer, enc func(fields ...string) []byte)) []byte {
	var out, hb bytes.Buffer
	fr := http2.NewFramer(&out, nil)
	he := hpack.NewEncoder(&hb)
	enc := func(fields ...string) []byte {
		hb.Reset()
		for i := 0; i+1 < len(fields); i += 2 {
			_ = he.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return append([]byte(nil), hb.Bytes()...)
	}
	write(fr, enc)
	return out.Bytes()
}

// awaitThree plays the server on sc: it reads the client's preface, sends its SETTINGS and
// returns true once the client has started three streams (false if sc failed first). The
// caller reads on: net.Pipe does not buffer, and the client writes acks.
func awaitThree(sc net.Conn) bool {
	buf := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(sc, buf); err != nil {
		return false
	}
	// The SETTINGS go out while the loop below reads.
	go func() { _ = http2.NewFramer(sc, nil).WriteSettings() }()
	sfr := http2.NewFramer(io.Discard, sc)
	for headers := 0; headers < 3; {
		fr, err := sfr.ReadFrame()
		if err != nil {
			return false
		}
		if _, ok := fr.(*http2.HeadersFrame); ok {
			headers++
		}
	}
	return true
}

// FuzzH2ServerFrames feeds arbitrary server bytes to a connection with three requests in
// flight (streams 1, 3, 5): no panic, every Do returns, and every error is one of the kinds
// the senders classify.
func FuzzH2ServerFrames(f *testing.F) {
	f.Add(serverFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(":status", "200", "apns-id", "x"), EndHeaders: true, EndStream: true})
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: enc(":status", "410"), EndHeaders: true})
		_ = fr.WriteData(3, false, []byte(`{"reason":"Unreg`))
		_ = fr.WriteData(3, true, []byte(`istered","timestamp":1}`))
		_ = fr.WriteGoAway(3, http2.ErrCodeNo, []byte("bye"))
	}))
	f.Add(serverFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WritePing(false, [8]byte{1})
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
		_ = fr.WriteWindowUpdate(0, 1<<30)
		_ = fr.WriteRSTStream(1, http2.ErrCodeRefusedStream)
		_ = fr.WriteRSTStream(3, http2.ErrCodeInternal)
		b := enc(":status", "100", ":status", "503", "retry-after", "5")
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: b[:2], EndStream: true})
		_ = fr.WriteContinuation(5, true, b[2:])
	}))
	f.Add(serverFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteData(1, true, []byte("no headers"))
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 7, BlockFragment: enc(":status", "200"), EndHeaders: true, EndStream: true})
		_ = fr.WritePushPromise(http2.PushPromiseParam{StreamID: 3, PromiseID: 2, BlockFragment: enc(":path", "/"), EndHeaders: true})
	}))
	f.Add([]byte{0, 0, 0, 4, 1, 0, 0, 0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		cc, sc := net.Pipe()
		defer sc.Close()
		seen := make(chan struct{})
		go func() {
			if awaitThree(sc) {
				close(seen)
				_, _ = io.Copy(io.Discard, sc)
			}
		}()
		c, err := NewConn(cc, Config{RequestTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		done := make(chan result, 3)
		for range 3 {
			go func() {
				var r result
				r.err = c.Do(context.Background(), testRequest("t", `{"aps":{}}`), &r.res)
				done <- r
			}()
		}
		select {
		case <-seen:
		case <-time.After(time.Minute):
			t.Fatal("three requests did not reach the server")
		}
		_, _ = sc.Write(data) // a frame error of the client's may stop it reading: fine
		_ = sc.Close()
		for range 3 {
			r := <-done
			var se *StreamError
			switch {
			case r.err == nil && (r.res.Status < 200 || r.res.Status > 999):
				t.Fatalf("answer with status %d", r.res.Status)
			case r.err != nil && !errors.Is(r.err, ErrNotProcessed) && !errors.Is(r.err, ErrConnLost) && !errors.As(r.err, &se):
				t.Fatalf("unclassified error %v", r.err)
			}
		}
	})
}

// A connection closed while its reader still has frames in its buffer: Close ends the
// requests, their callers pool their streams, and the next connection's requests take them
// while the old reader decodes the rest (a burst of PINGs, then each stream's answer in a
// HEADERS and a CONTINUATION frame). The reader must not touch a stream that has left its
// connection; under -race this fails if it does (FuzzH2ServerFrames found it once in CI).
func TestH2ClosedConnReaderLeavesPooledStreamsAlone(t *testing.T) {
	burst := serverFrames(func(fr *http2.Framer, enc func(...string) []byte) {
		for i := range 64 {
			_ = fr.WritePing(false, [8]byte{byte(i)})
		}
		for _, id := range []uint32{1, 3, 5} {
			b := enc(":status", "410", "retry-after", "1")
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b[:1], EndStream: true})
			_ = fr.WriteContinuation(id, true, b[1:])
		}
	})
	for range 100 {
		cc, sc := net.Pipe()
		go func() {
			if awaitThree(sc) {
				go func() { _, _ = io.Copy(io.Discard, sc) }() // the client's PING acks
				_, _ = sc.Write(burst)
			}
		}()
		c, err := NewConn(cc, Config{RequestTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 3)
		for range 3 {
			go func() { done <- c.Do(context.Background(), testRequest("t", `{"aps":{}}`), &Response{}) }()
		}
		// Close as soon as the first answer is in: the reader is somewhere in the burst.
		first := <-done
		c.Close()
		for _, err := range []error{first, <-done, <-done} {
			if err != nil && !errors.Is(err, ErrConnLost) && !errors.Is(err, ErrNotProcessed) {
				t.Fatalf("unclassified error %v", err)
			}
		}
		_ = sc.Close()
	}
}
