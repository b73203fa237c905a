//go:build linux

package h2

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"

	"github.com/pushd/pushd/internal/rawtcp"
)

// Dial puts TLS on a rawtcp connection, and HTTP/2 runs over it against Go's own server.
func TestH2DialUsesRawIO(t *testing.T) {
	c := goServer(t, nil, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(bytes.ToUpper(b))
	})
	if _, ok := c.nc.(*tls.Conn).NetConn().(*rawtcp.Conn); !ok {
		t.Fatalf("Dial's connection runs on %T, want *rawtcp.Conn", c.nc.(*tls.Conn).NetConn())
	}
	var res Response
	if err := c.Do(context.Background(), testRequest("x", `{"reason":"badtoken"}`), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != 400 || string(res.Body) != `{"REASON":"BADTOKEN"}` {
		t.Fatalf("got %d %q", res.Status, res.Body)
	}
}
