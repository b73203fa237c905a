package intake

import (
	"io"
	"net"
	"testing"
)

// TestConnRefusesWhatItCannotRead checks that Conn fails on a
// response it does not parse, rather than counting it or hanging, and reads the plain one.
func TestConnRefusesWhatItCannotRead(t *testing.T) {
	respond := func(res string) (int, []byte, error) {
		client, server := net.Pipe()
		defer client.Close()
		go func() {
			_, _ = io.Copy(io.Discard, io.LimitReader(server, int64(len("GET / HTTP/1.1\r\n\r\n"))))
			_, _ = server.Write([]byte(res))
			server.Close()
		}()
		return NewConn(client).RoundTrip([]byte("GET / HTTP/1.1\r\n\r\n"))
	}
	code, body, err := respond("HTTP/1.1 201 Created\r\ncontent-length: 2\r\nDate: x\r\n\r\n{}")
	if err != nil || code != 201 || string(body) != "{}" {
		t.Fatalf("plain response read as %d %q, %v", code, body, err)
	}
	for name, res := range map[string]string{
		"chunked":     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"close":       "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
		"no length":   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}",
		"bad length":  "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"http/1.0":    "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}",
		"short body":  "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}",
		"bad header":  "HTTP/1.1 200 OK\r\nno colon\r\nContent-Length: 2\r\n\r\n{}",
		"bad status":  "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\n{}",
		"no response": "",
	} {
		t.Run(name, func(t *testing.T) {
			if code, body, err := respond(res); err == nil {
				t.Fatalf("RoundTrip = %d %q, want an error", code, body)
			}
		})
	}
}
