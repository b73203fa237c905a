package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
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

// RegisterRouter adds GET /1.1/router, and the original's GET /v1/route. One node answers
// with its own gateway; a cluster will answer with the node owning the installation's
// push.direct partition.
func (s *Server) RegisterRouter(cfg RouterConfig) {
	s.registerLCRouter(cfg)
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
			url = "ws://" + askedHost(ctx) + ":" + cfg.Port() + "/1.1/connect"
		}
		b, err := json.Marshal(map[string]any{"server": url, "ttl": ttl, "v": 1})
		if err != nil {
			return err
		}
		WriteJSON(ctx, fasthttp.StatusOK, b)
		return nil
	})
}

// askedHost is the host the client asked at, without its port (an IPv6 address bracketed).
func askedHost(ctx *fasthttp.RequestCtx) string {
	host := string(ctx.Host())
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		host = "[" + host + "]"
	}
	return host
}

// registerLCRouter adds the original service's push router, GET /v1/route (docs/own-channel.md,
// section 9.1): the Android SDK of the original asks it, without a key, where the installation
// connects, and opens the original's protocol there (the gateway's path "/"). Parameters the
// SDK adds (installationId, secure) are accepted and not needed: one node answers with its
// own gateway, whatever the installation.
func (s *Server) registerLCRouter(cfg RouterConfig) {
	ttl := int64(cfg.TTL / time.Second)
	s.Register(Route{Method: "GET", Path: "/v1/route", Name: "router_lc", Auth: AuthNone}, func(ctx *fasthttp.RequestCtx, c *Call) error {
		appID := string(ctx.QueryArgs().Peek("appId"))
		if appID == "" {
			return push.Errorf(push.CodeMissingRequired, "missing parameter appId")
		}
		if _, err := s.apps.get(context.Background(), appID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return push.Errorf(push.CodeObjectNotFound, "no app %q", appID)
			}
			return push.Errorf(push.CodeUnavailable, "cannot read the app now, retry later")
		}
		server := "ws://" + askedHost(ctx) + ":" + cfg.Port() + "/"
		if cfg.URL != "" {
			if u, err := url.Parse(cfg.URL); err == nil {
				u.Path, u.RawPath, u.RawQuery, u.Fragment = "/", "", "", ""
				server = u.String()
			}
		}
		b, err := json.Marshal(map[string]any{"server": server, "secondary": server, "ttl": ttl})
		if err != nil {
			return err
		}
		WriteJSON(ctx, fasthttp.StatusOK, b)
		return nil
	})
}
