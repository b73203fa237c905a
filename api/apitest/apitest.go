// Package apitest is the HTTP client side of the API tests: one request helper and the checks
// of a JSON answer and of the {code, error} shape, shared by the api and api/pushapi tests.
// Test-only: nothing outside _test.go files imports it.
package apitest

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/store/pebble"
)

// Resp is an answer, copied out of fasthttp's reused buffers.
type Resp struct {
	Status int
	Body   []byte
	Header *fasthttp.ResponseHeader
}

// JSON decodes the body as a JSON object, failing t otherwise.
func (r Resp) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.Body, err)
	}
	return m
}

// Code checks the body is {code, error} and returns the code.
func (r Resp) Code(t testing.TB) int {
	t.Helper()
	m := r.JSON(t)
	c, ok := m["code"].(float64)
	if !ok {
		t.Fatalf("body %s has no code", r.Body)
	}
	if _, ok := m["error"].(string); !ok {
		t.Fatalf("body %s has no error text", r.Body)
	}
	return int(c)
}

// Do sends a request through c to url; headers alternate name, value. A body is sent as
// application/json unless a Content-Type header says otherwise ("" sends none).
func Do(t testing.TB, c *fasthttp.Client, method, url, body string, headers ...string) Resp {
	t.Helper()
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	res := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(res)
	req.SetRequestURI(url)
	req.Header.SetMethod(method)
	if body != "" {
		req.SetBodyString(body)
		req.Header.SetContentType("application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Content-Type") {
			req.Header.SetContentType(headers[i+1])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	if err := c.Do(req, res); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	h := &fasthttp.ResponseHeader{}
	res.Header.CopyTo(h)
	return Resp{Status: res.StatusCode(), Body: append([]byte(nil), res.Body()...), Header: h}
}

// UseStoreProcs runs a benchmark with the GOMAXPROCS pushd serve gives the embedded store
// (pebble.Procs of the -cpu value) and restores the previous value when it ends.
func UseStoreProcs(b *testing.B) {
	prev := runtime.GOMAXPROCS(pebble.Procs(runtime.GOMAXPROCS(0)))
	b.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}
