package api

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/store/pebble"
)

// TestAPIShutdownClosesSilentConnections: a connection that never sent a request (a client's
// spare keep-alive connection, a load balancer's TCP probe) does not hold the drain until the
// read timeout; an idle keep-alive connection is closed too, and the drain ends cleanly.
func TestAPIShutdownClosesSilentConnections(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The drain's budget is far below the read timeout, which is how long fasthttp alone
	// would wait on a silent connection.
	srv, err := New(Config{Addr: "127.0.0.1:0", ShutdownTimeout: 3 * time.Second, ReadTimeout: time.Minute}, Deps{Apps: st, Installations: st})
	if err != nil {
		t.Fatal(err)
	}
	srv.silentGrace = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	addr := srv.Addr().String()

	// One connection that has served a request and stays open (keep-alive)...
	client := &fasthttp.Client{}
	code, _, err := client.Get(nil, "http://"+addr+"/livez")
	if err != nil || code != 200 {
		t.Fatalf("GET /livez: %d %v", code, err)
	}
	// ...and one that never says anything.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The server has accepted it once a request on another connection was served after it.
	probe, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Write([]byte("GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(probe); err != nil {
		t.Fatal(err)
	}
	probe.Close()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute")
	}
	// The silent connection was closed by the server, not left to time out.
	if err := silent.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := silent.Read(make([]byte, 1))
	var ne net.Error
	if n != 0 || err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("silent connection after the drain: read %d, %v; want closed by the server", n, err)
	}
}
