package h2

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pushd/pushd/internal/waitfor"
)

// goServer starts Go's own HTTP/2 server (TLS, ALPN h2) with h2cfg and returns a connection to it.
func goServer(t *testing.T, h2cfg *http.HTTP2Config, h http.HandlerFunc) *Conn {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.Config.HTTP2 = h2cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	tc := srv.Client().Transport.(*http.Transport).TLSClientConfig
	c, err := Dial(context.Background(), u.Host, Config{TLS: tc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func testRequest(path string, body string, header ...[]byte) *Request {
	r := &Request{Path: "/3/device/", PathSuffix: path, Body: []byte(body)}
	copy(r.Header[:], header)
	return r
}

func TestH2GoServerRoundTrip(t *testing.T) {
	e := NewBlockEncoder()
	shared := e.Append(nil, "apns-topic", "com.example.chat")
	shared = e.Append(shared, "apns-push-type", "alert")
	c := goServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Apns-Topic") != "com.example.chat" || r.Header.Get("Apns-Push-Type") != "alert" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/dead") {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"reason":"Unregistered"}`))
			return
		}
		_, _ = w.Write(append([]byte(r.URL.Path+" "), b...)) // a 200's body is not kept
	})
	for range 3 { // the same shared block on several streams
		var res Response
		if err := c.Do(context.Background(), testRequest("abc", `{"aps":{}}`, shared), &res); err != nil {
			t.Fatal(err)
		}
		if res.Status != 200 || len(res.Body) != 0 {
			t.Fatalf("got %d %q, want 200 and no body kept", res.Status, res.Body)
		}
	}
	var res Response
	if err := c.Do(context.Background(), testRequest("dead", `{}`, shared), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != 410 || res.RetryAfter != "7" || string(res.Body) != `{"reason":"Unregistered"}` {
		t.Fatalf("got %d %q %q", res.Status, res.RetryAfter, res.Body)
	}
}

// The server's SETTINGS_MAX_CONCURRENT_STREAMS bounds the streams in flight: more callers
// wait on the connection, none is refused.
func TestH2GoServerMaxConcurrentStreams(t *testing.T) {
	const limit, callers = 3, 20
	var inflight, peak atomic.Int64
	release := make(chan struct{})
	c := goServer(t, &http.HTTP2Config{MaxConcurrentStreams: limit}, func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		inflight.Add(-1)
	})
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			var res Response
			if err := c.Do(context.Background(), testRequest(strconv.Itoa(i), "{}"), &res); err != nil || res.Status != 200 {
				errs <- errors.Join(err, errors.New("status "+strconv.Itoa(res.Status)))
			}
		})
	}
	waitfor.True(t, 10*time.Second, "streams at the limit", func() bool { return inflight.Load() == limit })
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if p := peak.Load(); p != limit {
		t.Fatalf("peak streams in flight %d, want the server's limit %d", p, limit)
	}
}

// A body far larger than the server's stream window goes out as the server's WINDOW_UPDATEs
// allow, intact.
func TestH2GoServerFlowControl(t *testing.T) {
	c := goServer(t, &http.HTTP2Config{MaxReceiveBufferPerStream: 1000}, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(b)
		w.WriteHeader(http.StatusBadRequest) // so the body is kept
		_, _ = w.Write([]byte(hex.EncodeToString(sum[:])))
	})
	body := strings.Repeat("0123456789abcdef", 20000) // 320 KB
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var res Response
			if err := c.Do(context.Background(), testRequest("x", body), &res); err != nil {
				t.Error(err)
				return
			}
			sum := sha256.Sum256([]byte(body))
			if string(res.Body) != hex.EncodeToString(sum[:]) {
				t.Errorf("server got a different body: %s", res.Body)
			}
		})
	}
	wg.Wait()
}

// A stream the server resets after reading it (not REFUSED_STREAM) may have been processed.
func TestH2GoServerStreamReset(t *testing.T) {
	c := goServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		panic(http.ErrAbortHandler) // RST_STREAM INTERNAL_ERROR
	})
	var res Response
	err := c.Do(context.Background(), testRequest("x", "{}"), &res)
	var se *StreamError
	if !errors.As(err, &se) || errors.Is(err, ErrNotProcessed) {
		t.Fatalf("got %v, want a StreamError that is not ErrNotProcessed", err)
	}
	if !c.Usable() {
		t.Fatal("one reset stream closed the connection")
	}
}

// rawServer is a scripted HTTP/2 server on a loopback TCP connection (cleartext).
type rawServer struct {
	t   *testing.T
	nc  net.Conn
	fr  *http2.Framer
	dec *hpack.Decoder
	enc *hpack.Encoder
	hb  strings.Builder
	mu  sync.Mutex // guards writes
}

type rawRequest struct {
	id     uint32
	path   string
	header map[string]string
	body   []byte
}

// startRaw connects a Conn to a raw server that announces settings.
func startRaw(t *testing.T, cfg Config, settings ...http2.Setting) (*Conn, *rawServer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan *rawServer, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			ch <- nil
			return
		}
		s := &rawServer{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
		s.dec = hpack.NewDecoder(4096, nil)
		s.enc = hpack.NewEncoder(&s.hb)
		buf := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(nc, buf); err != nil || string(buf) != http2.ClientPreface {
			_ = nc.Close()
			ch <- nil
			return
		}
		_ = s.fr.WriteSettings(settings...)
		ch <- s
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConn(cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := <-ch
	if s == nil {
		t.Fatal("raw server: no client preface")
	}
	t.Cleanup(func() { c.Close(); _ = s.nc.Close() })
	return c, s
}

// next reads frames until one that is not connection housekeeping.
func (s *rawServer) next() http2.Frame {
	s.t.Helper()
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			s.t.Errorf("raw server: %v", err)
			return nil
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				s.mu.Lock()
				_ = s.fr.WriteSettingsAck()
				s.mu.Unlock()
			}
			continue
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				continue
			}
		}
		return f
	}
}

// request reads one whole request (HEADERS, CONTINUATION, DATA up to END_STREAM); it
// expects no other stream's frames in between.
func (s *rawServer) request() rawRequest {
	s.t.Helper()
	var r rawRequest
	f := s.next()
	hf, ok := f.(*http2.HeadersFrame)
	if !ok {
		s.t.Fatalf("raw server: got %v, want HEADERS", f)
	}
	r.id, r.header = hf.StreamID, map[string]string{}
	s.dec.SetEmitFunc(func(f hpack.HeaderField) { r.header[f.Name] = f.Value })
	_, _ = s.dec.Write(hf.HeaderBlockFragment())
	end, ended := hf.HeadersEnded(), hf.StreamEnded()
	for !end {
		cf := s.next().(*http2.ContinuationFrame)
		_, _ = s.dec.Write(cf.HeaderBlockFragment())
		end = cf.HeadersEnded()
	}
	_ = s.dec.Close()
	r.path = r.header[":path"]
	for !ended {
		df := s.next().(*http2.DataFrame)
		r.body = append(r.body, df.Data()...)
		ended = df.StreamEnded()
	}
	return r
}

func (s *rawServer) respond(id uint32, status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hb.Reset()
	_ = s.enc.WriteField(hpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)})
	_ = s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte(s.hb.String()), EndHeaders: true, EndStream: body == ""})
	if body != "" {
		_ = s.fr.WriteData(id, true, []byte(body))
	}
}

type result struct {
	res Response
	err error
}

func goDo(c *Conn, suffix string) chan result {
	ch := make(chan result, 1)
	go func() {
		var r result
		r.err = c.Do(context.Background(), testRequest(suffix, `{"aps":{}}`), &r.res)
		ch <- r
	}()
	return ch
}

// GOAWAY: streams up to its last-stream-id run to their answer; those above were not
// processed; the connection takes no new stream and closes once idle.
func TestH2RawGoAway(t *testing.T) {
	c, s := startRaw(t, Config{})
	var chans []chan result
	var ids []uint32
	for i := range 3 {
		chans = append(chans, goDo(c, strconv.Itoa(i)))
		ids = append(ids, s.request().id) // one at a time: stream order is request order
	}
	_ = s.fr.WriteGoAway(ids[1], http2.ErrCodeNo, nil)
	if r := <-chans[2]; !errors.Is(r.err, ErrNotProcessed) {
		t.Fatalf("stream above last-stream-id: got %v, want ErrNotProcessed", r.err)
	}
	if c.Usable() {
		t.Fatal("connection usable after GOAWAY")
	}
	if err := c.Do(context.Background(), testRequest("late", "{}"), &Response{}); !errors.Is(err, ErrNotProcessed) {
		t.Fatalf("new request after GOAWAY: got %v, want ErrNotProcessed", err)
	}
	s.respond(ids[0], 200, "")
	s.respond(ids[1], 400, `{"reason":"BadTopic"}`)
	if r := <-chans[0]; r.err != nil || r.res.Status != 200 {
		t.Fatalf("stream below last-stream-id: %+v", r)
	}
	if r := <-chans[1]; r.err != nil || r.res.Status != 400 || string(r.res.Body) != `{"reason":"BadTopic"}` {
		t.Fatalf("stream at last-stream-id: %+v", r)
	}
	// Idle after GOAWAY: the client closes the connection.
	_ = s.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, s.nc); err != nil {
		t.Fatalf("connection not closed by the client after GOAWAY: %v", err)
	}
}

// RST_STREAM REFUSED_STREAM means not processed; other codes may have been.
func TestH2RawReset(t *testing.T) {
	c, s := startRaw(t, Config{})
	ch := goDo(c, "a")
	_ = s.fr.WriteRSTStream(s.request().id, http2.ErrCodeRefusedStream)
	if r := <-ch; !errors.Is(r.err, ErrNotProcessed) {
		t.Fatalf("REFUSED_STREAM: got %v, want ErrNotProcessed", r.err)
	}
	ch = goDo(c, "b")
	_ = s.fr.WriteRSTStream(s.request().id, http2.ErrCodeInternal)
	r := <-ch
	var se *StreamError
	if !errors.As(r.err, &se) || se.Code != http2.ErrCodeInternal || errors.Is(r.err, ErrNotProcessed) {
		t.Fatalf("INTERNAL_ERROR: got %v", r.err)
	}
	ch = goDo(c, "c") // the connection goes on
	s.respond(s.request().id, 200, "")
	if r := <-ch; r.err != nil || r.res.Status != 200 {
		t.Fatalf("after resets: %+v", r)
	}
}

// A connection that drops with a request on the wire loses it (maybe processed); requests
// queued behind the stream limit were never sent (not processed).
func TestH2RawConnectionLost(t *testing.T) {
	c, s := startRaw(t, Config{}, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1})
	sent := goDo(c, "a")
	s.request()
	queued := goDo(c, "b")
	waitfor.True(t, 10*time.Second, "one queued request", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.waiting) == 1 })
	_ = s.nc.Close()
	if r := <-sent; !errors.Is(r.err, ErrConnLost) || errors.Is(r.err, ErrNotProcessed) {
		t.Fatalf("request on the wire: got %v, want ErrConnLost", r.err)
	}
	if r := <-queued; !errors.Is(r.err, ErrNotProcessed) {
		t.Fatalf("queued request: got %v, want ErrNotProcessed", r.err)
	}
}

// SETTINGS_MAX_CONCURRENT_STREAMS=1: the next stream starts only when the previous ends,
// and a later SETTINGS raising the limit starts the queued ones.
func TestH2RawStreamLimitAndSettingsChange(t *testing.T) {
	c, s := startRaw(t, Config{}, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1})
	var chans []chan result
	for i := range 4 {
		chans = append(chans, goDo(c, strconv.Itoa(i)))
	}
	first := s.request()
	waitfor.True(t, 10*time.Second, "three queued requests", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.waiting) == 3 })
	s.respond(first.id, 200, "")
	second := s.request() // only after the first answer
	s.mu.Lock()
	_ = s.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 10})
	s.mu.Unlock()
	third, fourth := s.request(), s.request()
	for _, id := range []uint32{second.id, third.id, fourth.id} {
		s.respond(id, 200, "")
	}
	for i, ch := range chans {
		if r := <-ch; r.err != nil || r.res.Status != 200 {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
}

// The stream window of the server's SETTINGS bounds DATA until its WINDOW_UPDATE.
func TestH2RawFlowControlWindow(t *testing.T) {
	c, s := startRaw(t, Config{}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
	body := strings.Repeat("x", 25)
	ch := make(chan error, 1)
	go func() { ch <- c.Do(context.Background(), testRequest("a", body), &Response{}) }()
	hf := s.next().(*http2.HeadersFrame)
	if hf.StreamEnded() {
		t.Fatal("HEADERS ended the stream of a request with a body")
	}
	got := 0
	for got < 10 {
		got += len(s.next().(*http2.DataFrame).Data())
	}
	if got != 10 {
		t.Fatalf("sent %d bytes into a 10-byte window", got)
	}
	s.mu.Lock()
	_ = s.fr.WriteWindowUpdate(hf.StreamID, 100)
	s.mu.Unlock()
	for {
		df := s.next().(*http2.DataFrame)
		got += len(df.Data())
		if df.StreamEnded() {
			break
		}
	}
	if got != len(body) {
		t.Fatalf("server got %d bytes, want %d", got, len(body))
	}
	s.respond(hf.StreamID, 200, "")
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
}

// A server PING is answered with its data; a silent server is pinged and, unanswered, dropped.
func TestH2RawPing(t *testing.T) {
	c, s := startRaw(t, Config{ReadIdleTimeout: 50 * time.Millisecond, PingTimeout: 10 * time.Second})
	data := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	s.mu.Lock()
	_ = s.fr.WritePing(false, data)
	s.mu.Unlock()
	sawAck, sawPing := false, false
	for !sawAck || !sawPing {
		pf, ok := s.next().(*http2.PingFrame)
		if !ok {
			t.Fatal("want PING frames only")
		}
		if pf.IsAck() {
			if pf.Data != data {
				t.Fatalf("ack data %v, want %v", pf.Data, data)
			}
			sawAck = true
		} else {
			sawPing = true // the idle check
		}
	}
	if !c.Usable() {
		t.Fatal("connection closed")
	}
}

func TestH2RawContinuationAndLongPath(t *testing.T) {
	c, s := startRaw(t, Config{})
	long := strings.Repeat("p", 40000) // header block beyond one 16 KB frame
	ch := goDo(c, long)
	r := s.request()
	if r.path != "/3/device/"+long || string(r.body) != `{"aps":{}}` {
		t.Fatalf("server got path of %d bytes, body %q", len(r.path), r.body)
	}
	s.respond(r.id, 200, "")
	if res := <-ch; res.err != nil {
		t.Fatal(res.err)
	}
}

func TestH2RawContextCancel(t *testing.T) {
	c, s := startRaw(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- c.Do(ctx, testRequest("a", "{}"), &Response{}) }()
	r := s.request()
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	rf, ok := s.next().(*http2.RSTStreamFrame)
	if !ok || rf.StreamID != r.id || rf.ErrCode != http2.ErrCodeCancel {
		t.Fatalf("want RST_STREAM CANCEL of stream %d, got %v", r.id, rf)
	}
	s.respond(r.id, 200, "") // a late answer is ignored
	ch2 := goDo(c, "b")
	s.respond(s.request().id, 200, "")
	if res := <-ch2; res.err != nil || res.res.Status != 200 {
		t.Fatalf("after cancel: %+v", res)
	}
}

// After GOAWAY, a connection whose last stream ends by the caller's cancel closes too.
func TestH2RawGoAwayThenCancelCloses(t *testing.T) {
	c, s := startRaw(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- c.Do(ctx, testRequest("a", "{}"), &Response{}) }()
	r := s.request()
	_ = s.fr.WriteGoAway(r.id, http2.ErrCodeNo, nil)
	waitfor.True(t, 10*time.Second, "GOAWAY applied", func() bool { return !c.Usable() })
	cancel()
	if err := <-ch; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	_ = s.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, s.nc); err != nil {
		t.Fatalf("connection not closed by the client: %v", err)
	}
}
