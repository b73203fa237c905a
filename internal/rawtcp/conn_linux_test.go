//go:build linux

package rawtcp

import (
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// rawPair returns a wrapped client connection and the server's end of it, on loopback.
func rawPair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	c, ok := Wrap(nc).(*Conn)
	if !ok {
		t.Fatalf("Wrap(%T) did not wrap it", nc)
	}
	t.Cleanup(func() { _ = c.Close(); _ = srv.Close() })
	return c, srv
}

// A write larger than the socket buffers waits in the poller while the peer does not read (a
// deadline ends that wait with a timeout, after a partial write), then completes once it reads;
// every byte arrives, in order.
func TestRawIOWriteWaitsForTheReader(t *testing.T) {
	c, srv := rawPair(t)
	data := make([]byte, 32<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	n, err := c.Write(data)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write to a peer that does not read: %d bytes, err %v; want a timeout", n, err)
	}
	if n <= 0 || n >= len(data) {
		t.Fatalf("wrote %d of %d bytes before the deadline, want a partial write", n, len(data))
	}
	sum := make(chan [32]byte, 1)
	go func() {
		h := sha256.New()
		_, _ = io.Copy(h, srv)
		var s [32]byte
		copy(s[:], h.Sum(nil))
		sum <- s
	}()
	if err := c.SetWriteDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	m, err := c.Write(data[n:])
	if err != nil || m != len(data)-n {
		t.Fatalf("rest of the write: %d of %d bytes, %v", m, len(data)-n, err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := <-sum; got != sha256.Sum256(data) {
		t.Fatal("the peer received other bytes than were written")
	}
}

// Reads: a deadline gives a timeout, data is read as it comes, the peer's close is io.EOF,
// and a Close of our side ends a read waiting in the poller with net.ErrClosed.
func TestRawIOReadDeadlineEOFAndClose(t *testing.T) {
	c, srv := rawPair(t)
	buf := make([]byte, 64)
	if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) || n != 0 {
		t.Fatalf("read with nothing sent: %d bytes, %v; want a timeout", n, err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(buf[:0]); n != 0 || err != nil {
		t.Fatalf("empty read: %d, %v", n, err)
	}
	if _, err := srv.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf[:5]); err != nil || string(buf[:5]) != "hello" {
		t.Fatalf("read %q, %v", buf[:5], err)
	}
	_ = srv.Close()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after the peer closed: %d, %v; want io.EOF", n, err)
	}

	c2, _ := rawPair(t)
	done := make(chan error, 1)
	go func() {
		_, err := c2.Read(buf)
		done <- err
	}()
	_ = c2.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read ended by Close: %v, want net.ErrClosed", err)
	}
	if _, err := c2.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after Close: %v, want net.ErrClosed", err)
	}
}

// A read or a write that succeeds allocates nothing: the gateway senders make about one of
// each per few deliveries, and their pipeline allocates nothing per target (issue 16, item 3).
func TestRawIOReadWriteAllocateNothing(t *testing.T) {
	c, srv := rawPair(t)
	msg := []byte("ping")
	buf := make([]byte, 64)
	writes := testing.AllocsPerRun(200, func() {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(srv, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	reads := testing.AllocsPerRun(200, func() {
		if _, err := srv.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	})
	if writes != 0 || reads != 0 {
		t.Fatalf("allocations per write %v, per read %v; want 0 (the server's end counted too: it allocates none)", writes, reads)
	}
}
