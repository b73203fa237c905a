package api

import (
	"encoding/json"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/push"
)

// RouterConfig is the own channel's router (GET /1.1/router, docs/own-channel.md): where a
// device connects.
type RouterConfig struct {
	// URL is the connect endpoint's URL (ws:// or wss://, ending in /1.1/connect). Empty: the
	// host the device asked the router at, with Port.
	URL string
	// Port gives the gateway's port, used when URL is empty (a func: the port is known once
	// the gateway listens, which may be on port 0).
	Port func() string
	// TTL is how long a device may keep the answer.
	TTL time.Duration
}

// RegisterRouter adds GET /1.1/router. One node answers with its own gateway; a cluster will
// answer with the node owning the installation's push.direct partition.
func (s *Server) RegisterRouter(cfg RouterConfig) {
	ttl := int64(cfg.TTL / time.Second)
	s.Register(Route{Method: "GET", Path: "/1.1/router", Name: "router", Auth: AuthApp}, func(ctx *fasthttp.RequestCtx, c *Call) error {
		for k := range ctx.QueryArgs().All() {
			if string(k) != "installationId" {
				return push.Errorf(push.CodeValidation, "unknown parameter %q: the router takes installationId", k)
			}
		}
		if len(ctx.QueryArgs().Peek("installationId")) == 0 {
			return push.Errorf(push.CodeMissingRequired, "missing parameter installationId")
		}
		url := cfg.URL
		if url == "" {
			host := string(ctx.Host())
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
				host = "[" + host + "]"
			}
			url = "ws://" + host + ":" + cfg.Port() + "/1.1/connect"
		}
		b, err := json.Marshal(map[string]any{"server": url, "ttl": ttl, "v": 1})
		if err != nil {
			return err
		}
		WriteJSON(ctx, fasthttp.StatusOK, b)
		return nil
	})
}
