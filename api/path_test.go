package api

import (
	"bufio"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// rawDo sends a request with its path exactly as given (fasthttp's client would normalise
// it, as curl --path-as-is does not); headers alternate name, value.
func (e *testEnv) rawDo(t *testing.T, method, path, body string, headers ...string) resp {
	t.Helper()
	conn, err := e.ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: pushd.test\r\nConnection: close\r\n", method, path)
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", headers[i], headers[i+1])
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n" + body)
	if _, err := conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	var res fasthttp.Response
	if err := res.Read(bufio.NewReader(conn)); err != nil {
		t.Fatal(err)
	}
	h := &fasthttp.ResponseHeader{}
	res.Header.CopyTo(h)
	return resp{Status: res.StatusCode(), Body: append([]byte(nil), res.Body()...), Header: h}
}

// TestAPIRoutingEncodedSegments: a path reaches only the route its raw segments name. An
// encoded separator or a dot segment used to be decoded and collapsed by fasthttp before
// routing, so /1.1/installations/..%2f..%2fmetrics answered with the metrics and
// /1.1/..%2fadmin/apps reached the admin API.
func TestAPIRoutingEncodedSegments(t *testing.T) {
	e := newEnv(t)
	oid, _ := e.create(`{"deviceType":"android","installationId":"route-1"}`)
	app, master, admin := e.appHeaders(), e.masterHeaders(), e.adminHeaders()
	for _, c := range []struct {
		name, path string
		headers    []string
	}{
		{"encoded slashes up to the metrics", "/1.1/installations/..%2f..%2fmetrics", app},
		{"upper-case encoded slashes", "/1.1/installations/..%2F..%2Fmetrics", app},
		{"encoded slash into the admin API", "/1.1/..%2fadmin/apps", admin},
		{"encoded dots", "/1.1/installations/%2e%2e/%2e%2e/metrics", app},
		{"raw dot segments", "/1.1/installations/../../metrics", app},
		{"raw dot segments into the admin API", "/1.1/../admin/apps", admin},
		{"single dot segment", "/1.1/./installations/" + oid, app},
		{"encoded backslashes", "/1.1/installations/..%5c..%5cmetrics", app},
		{"raw backslashes", `/1.1/installations/..\..\metrics`, app},
		{"encoded slash inside an id", "/1.1/installations/" + oid + "%2f..", master},
		{"admin path through the installations", "/1.1/installations/..%2f..%2fadmin%2fapps", admin},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.rawDo(t, "GET", c.path, "", c.headers...)
			if r.Status != 404 || r.Code(t) != 404 {
				t.Fatalf("GET %s: %d %.200s, want 404 code 404", c.path, r.Status, r.Body)
			}
			if strings.Contains(string(r.Body), "pushd_") || strings.Contains(string(r.Body), "results") {
				t.Fatalf("GET %s leaked another route's answer: %.200s", c.path, r.Body)
			}
		})
	}
	// The routes themselves still answer, and an encoded ordinary character in a segment is
	// that character.
	for _, c := range []struct {
		path    string
		headers []string
		status  int
	}{
		{"/1.1/installations/" + oid, app, 200},
		{"/1.1/installations/" + oid + "/", app, 200},
		{"/1.1/installations/%" + fmt.Sprintf("%02x", oid[0]) + oid[1:], app, 200},
		{"/1.1/installations/nosuchid", app, 404},
		{"/metrics", nil, 200},
		{"/admin/apps", admin, 200},
	} {
		if r := e.rawDo(t, "GET", c.path, "", c.headers...); r.Status != c.status {
			t.Fatalf("GET %s: %d %.200s, want %d", c.path, r.Status, r.Body, c.status)
		}
	}
}
