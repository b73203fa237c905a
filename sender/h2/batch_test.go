package h2

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
)

// goPool starts Go's own HTTP/2 server with handler h and returns a Pool of maxConns
// connections of streams requests each to it.
func goPool(t *testing.T, maxConns, streams int, h http.HandlerFunc) *Pool {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tc := srv.Client().Transport.(*http.Transport).TLSClientConfig
	p, err := NewPool("apns", srv.URL, Config{TLS: tc}, maxConns, streams)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// DoBatch answers each request with its own response, over several connections, never more
// requests in flight than the set allows; a batch larger than the set waits for streams to end.
func TestH2PoolDoBatchGoServer(t *testing.T) {
	const maxConns, streams, n = 2, 5, 57
	var inflight, peak atomic.Int64
	p := goPool(t, maxConns, streams, func(w http.ResponseWriter, r *http.Request) {
		c := inflight.Add(1)
		defer inflight.Add(-1)
		for m := peak.Load(); c > m && !peak.CompareAndSwap(m, c); m = peak.Load() {
		}
		i, _ := strconv.Atoi(r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:])
		if i%7 == 3 {
			w.Header().Set("Retry-After", strconv.Itoa(i))
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"reason":"Unregistered","i":` + strconv.Itoa(i) + `}`))
			return
		}
		time.Sleep(time.Millisecond) // hold the stream a moment so batches overlap the limit
	})
	e := NewBlockEncoder()
	hdr := e.Append(nil, "apns-topic", "com.example.chat")
	for round := range 2 { // the second round reuses pooled streams and the group
		reqs := make([]Request, n)
		for i := range reqs {
			reqs[i] = Request{Path: "/3/device/", PathSuffix: strconv.Itoa(i), Header: [3][]byte{hdr}, Body: []byte(`{"aps":{}}`)}
		}
		res := make([]Response, n)
		errs := make([]error, n)
		p.DoBatch(context.Background(), reqs, res, errs)
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d, request %d: %v", round, i, errs[i])
			}
			want := 200
			if i%7 == 3 {
				want = 410
				if res[i].RetryAfter != strconv.Itoa(i) || string(res[i].Body) != `{"reason":"Unregistered","i":`+strconv.Itoa(i)+`}` {
					t.Fatalf("round %d, request %d: answer of another request: %q %q", round, i, res[i].RetryAfter, res[i].Body)
				}
			}
			if res[i].Status != want {
				t.Fatalf("round %d, request %d: status %d, want %d", round, i, res[i].Status, want)
			}
		}
	}
	if m := peak.Load(); m > maxConns*streams {
		t.Fatalf("%d requests in flight at once, the set allows %d", m, maxConns*streams)
	}
	if p.Len() != maxConns {
		t.Fatalf("%d connections, want %d (the batch needs more streams than one has)", p.Len(), maxConns)
	}
}

// A batch whose context ends returns at once: the requests without an answer get the
// context's error and their streams are reset (the server sees them canceled); those answered
// keep their answer.
func TestH2PoolDoBatchCancel(t *testing.T) {
	var held, canceled atomic.Int64
	p := goPool(t, 1, 10, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/hold") {
			held.Add(1)
			<-r.Context().Done()
			canceled.Add(1)
			return
		}
	})
	// One answered batch first, so the connection is up and its answers are known.
	reqs := []Request{{Path: "/3/device/", PathSuffix: "fast"}, {Path: "/3/device/", PathSuffix: "hold"}, {Path: "/3/device/", PathSuffix: "hold"}}
	res := make([]Response, len(reqs))
	errs := make([]error, len(reqs))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.DoBatch(ctx, reqs, res, errs)
	}()
	waitfor.True(t, 20*time.Second, "both held requests at the server", func() bool { return held.Load() == 2 })
	cancel()
	<-done
	for i := 1; i < 3; i++ {
		if !errors.Is(errs[i], context.Canceled) {
			t.Fatalf("held request %d: %v, want context.Canceled", i, errs[i])
		}
	}
	if errs[0] != nil && !errors.Is(errs[0], context.Canceled) || errs[0] == nil && res[0].Status != 200 {
		t.Fatalf("fast request: %v, status %d", errs[0], res[0].Status)
	}
	waitfor.True(t, 20*time.Second, "the server to see both held streams reset", func() bool { return canceled.Load() == 2 })
	// The connection stays usable, and its streams were given back.
	res2 := make([]Response, 1)
	errs2 := make([]error, 1)
	p.DoBatch(context.Background(), reqs[:1], res2, errs2)
	if errs2[0] != nil || res2[0].Status != 200 {
		t.Fatalf("after the cancel: %v, status %d", errs2[0], res2[0].Status)
	}
}
