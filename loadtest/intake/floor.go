package intake

import (
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// floorReply is the floor's answer to every request: the size of pushd's accept answer.
var floorReply = []byte(`{"objectId":"0123456789abcdef01234567","createdAt":"2026-11-25T00:00:00.000Z"}`)

// ServeFloor serves the floor on ln until it fails: a fasthttp server (the library pushd's API
// is built on, with the same read and write buffers) that answers every request 200 with a
// fixed JSON body and does nothing else. The same generator against it measures what HTTP on
// loopback costs this machine, so pushd's figures can be given as a ratio to it.
func ServeFloor(ln net.Listener) error {
	return ServeReply(ln, floorReply)
}

// ServeReply serves a floor that answers every request with reply (JSON) on ln until it
// fails, for a figure whose answers are shaped otherwise than pushd's accept answer.
func ServeReply(ln net.Listener, reply []byte) error {
	s := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			ctx.SetContentType("application/json; charset=utf-8")
			ctx.SetBody(reply)
		},
		ReadBufferSize: 16 << 10, // pushd's (docs/decisions.md, Requests 7)
		ReadTimeout:    time.Minute,
		WriteTimeout:   time.Minute,
	}
	return s.Serve(ln)
}
