package api

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/pushd/pushd/api/apitest"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store/pebble"
)

// TestAPIErrorsCodeOneByStatus: code 1 is the original service's "internal error or bad
// parameter". An invalid value answers 400 with it, a handler failure or panic 500.
func TestAPIErrorsCodeOneByStatus(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := New(Config{}, Deps{Apps: st, Installations: st})
	if err != nil {
		t.Fatal(err)
	}
	srv.Register(Route{Method: "GET", Path: "/t/invalid", Name: "t"}, func(*fasthttp.RequestCtx, *Call) error {
		return push.Errorf(push.CodeValidation, "bad value")
	})
	srv.Register(Route{Method: "GET", Path: "/t/failed", Name: "t"}, func(*fasthttp.RequestCtx, *Call) error {
		return errors.New("cannot read store")
	})
	srv.Register(Route{Method: "GET", Path: "/t/panic", Name: "t"}, func(*fasthttp.RequestCtx, *Call) error {
		panic("BUG: test")
	})
	ln := fasthttputil.NewInmemoryListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunListener(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	c := &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	for path, status := range map[string]int{"/t/invalid": 400, "/t/failed": 500, "/t/panic": 500} {
		r := apitest.Do(t, c, "GET", "http://pushd.test"+path, "")
		if r.Status != status || r.Code(t) != 1 {
			t.Errorf("GET %s: %d %s, want %d code 1", path, r.Status, r.Body, status)
		}
	}
}
