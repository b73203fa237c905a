package console

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/apitest"
	"github.com/pushd/pushd/store/pebble"
)

// TestConsoleServesEmbeddedAssets: a real API server on loopback serves the console's page
// and every file it loads without a key, with the content types a browser needs to run ES
// modules and a policy that keeps the page to its own origin; an unknown file is a 404
// {code, error}, and a path outside the console's one level finds no route.
func TestConsoleServesEmbeddedAssets(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv, err := api.New(api.Config{Addr: "127.0.0.1:0"}, api.Deps{Apps: st, Installations: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(srv); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	base := "http://" + srv.Addr().String()
	c := &fasthttp.Client{}

	for _, path := range []string{"/console", "/console/"} {
		r := apitest.Do(t, c, "GET", base+path, "")
		if r.Status != 200 || !strings.HasPrefix(string(r.Header.ContentType()), "text/html") {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Header.ContentType())
		}
		if csp := string(r.Header.Peek("Content-Security-Policy")); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Fatalf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if string(r.Header.Peek("Referrer-Policy")) != "no-referrer" || string(r.Header.Peek("X-Content-Type-Options")) != "nosniff" {
			t.Fatalf("GET %s: headers %s", path, r.Header.String())
		}
	}
	page := apitest.Do(t, c, "GET", base+"/console", "")
	refs := regexp.MustCompile(`(?:src|href)="(/console/[^"]+)"`).FindAllStringSubmatch(string(page.Body), -1)
	if len(refs) < 2 {
		t.Fatalf("the page loads %d console files, want its script and style: %s", len(refs), page.Body)
	}
	// The page's files and the modules its script imports.
	files := map[string]string{}
	for _, m := range refs {
		files[m[1]] = ""
	}
	for f := range files {
		r := apitest.Do(t, c, "GET", base+f, "")
		if r.Status != 200 || len(r.Body) == 0 {
			t.Fatalf("GET %s: %d", f, r.Status)
		}
		if strings.HasSuffix(f, ".js") {
			for _, m := range regexp.MustCompile(`from '\./([^']+)'`).FindAllStringSubmatch(string(r.Body), -1) {
				imp := apitest.Do(t, c, "GET", base+"/console/"+m[1], "")
				if imp.Status != 200 || string(imp.Header.ContentType()) != "text/javascript; charset=utf-8" {
					t.Fatalf("module %s imported by %s: %d %s", m[1], f, imp.Status, imp.Header.ContentType())
				}
			}
		}
		want := map[bool]string{true: "text/javascript; charset=utf-8", false: "text/css; charset=utf-8"}[strings.HasSuffix(f, ".js")]
		if got := string(r.Header.ContentType()); got != want {
			t.Fatalf("GET %s: Content-Type %q, want %q", f, got, want)
		}
	}
	r := apitest.Do(t, c, "GET", base+"/console/nosuch.js", "")
	if r.Status != 404 || r.Code(t) != 404 {
		t.Fatalf("GET an unknown console file: %d %s", r.Status, r.Body)
	}
	if r := apitest.Do(t, c, "GET", base+"/console/a/b.js", ""); r.Status != 404 {
		t.Fatalf("GET a nested console path: %d %s", r.Status, r.Body)
	}
}
