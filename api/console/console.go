// Package console owns pushd's web console: static HTML, CSS and JavaScript modules embedded in
// the binary and served at /console by every node with the api role. The console is a client
// of the REST API only (push records, scheduled pushes, dry runs, installations), calling it
// from the browser with the app id and master key the user signs in with; the server keeps no
// session and the key never reaches a URL. Assets are immutable after build, so serving them
// is safe from any number of goroutines.
package console

import (
	"embed"
	"io/fs"
	"mime"
	"path"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/push"
)

//go:embed assets
var assets embed.FS

// Prefix is the console's path on the API listener.
const Prefix = "/console"

// securityHeaders are sent with every asset. The policy lets the page load only its own
// scripts and styles and talk only to its own origin, so an injected string cannot pull in a
// script nor send the key elsewhere; no-referrer keeps the page's URL out of other requests.
var securityHeaders = [][2]string{
	{"Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"},
	{"X-Content-Type-Options", "nosniff"},
	{"Referrer-Policy", "no-referrer"},
	{"X-Frame-Options", "DENY"},
	// The console is small and changes with the binary: always revalidate, never serve a
	// stale script against a newer API.
	{"Cache-Control", "no-cache"},
}

// asset is one embedded file, read once.
type asset struct {
	body        []byte
	contentType string
}

// Register adds GET /console (the page) and GET /console/<file> (its scripts and styles) to srv.
// They need no key: the assets hold no data, every API call the page makes is authenticated.
func Register(srv *api.Server) error {
	files := map[string]asset{}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		if strings.HasSuffix(p, ".js") {
			ct = "text/javascript; charset=utf-8" // the same on every OS, whatever its mime tables say
		}
		files[strings.TrimPrefix(p, "assets/")] = asset{body: b, contentType: ct}
		return nil
	})
	if err != nil {
		return err
	}
	index, ok := files["index.html"]
	if !ok {
		panic("BUG: console assets have no index.html")
	}
	srv.Register(api.Route{Method: "GET", Path: Prefix, Name: "console"}, func(ctx *fasthttp.RequestCtx, _ *api.Call) error {
		serve(ctx, index)
		return nil
	})
	srv.Register(api.Route{Method: "GET", Path: Prefix + "/:file", Name: "console"}, func(ctx *fasthttp.RequestCtx, c *api.Call) error {
		a, ok := files[c.Params[0]]
		if !ok {
			return push.Errorf(push.CodeNotFoundRoute, "no console file %q", c.Params[0])
		}
		serve(ctx, a)
		return nil
	})
	return nil
}

func serve(ctx *fasthttp.RequestCtx, a asset) {
	for _, h := range securityHeaders {
		ctx.Response.Header.Set(h[0], h[1])
	}
	ctx.Response.Header.SetContentType(a.contentType)
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetBody(a.body)
}
