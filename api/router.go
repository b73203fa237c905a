package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
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
	// Gateways, when set, is a cluster's gateway registry: a device is sent to the node
	// advertising its installation's push.direct partition (one of Partitions), or to any
	// live node when none does (a rebalance under way: a node that does not own the device
	// moves it, and it asks again). URL and Port are then unused.
	Gateways   GatewayLister
	Partitions int
}

// GatewayLister lists the live gateway nodes (store.Store implements it).
type GatewayLister interface {
	Gateways(ctx context.Context, now time.Time) ([]store.Gateway, error)
}

// gatewayCacheFor bounds how stale the router's copy of the registry may be: a reconnect
// storm reads the store once per period, not once per device. A device sent to a node that
// stopped meanwhile fails to connect and asks again.
const gatewayCacheFor = time.Second

// gatewayCache is the router's copy of the registry.
type gatewayCache struct {
	mu   sync.Mutex
	at   time.Time
	list []store.Gateway
}

// clusterServer is the connect URL (…/1.1/connect) of the gateway node serving iid.
func (cfg *RouterConfig) clusterServer(ctx context.Context, gc *gatewayCache, now time.Time, iid string) (string, error) {
	gc.mu.Lock()
	if gc.list == nil || now.Sub(gc.at) >= gatewayCacheFor || now.Before(gc.at) {
		list, err := cfg.Gateways.Gateways(ctx, now)
		if err != nil {
			gc.mu.Unlock()
			return "", push.Errorf(push.CodeUnavailable, "cannot read the gateway nodes now, retry later")
		}
		gc.list, gc.at = list, now
		if gc.list == nil {
			gc.list = []store.Gateway{}
		}
	}
	list := gc.list
	gc.mu.Unlock()
	g, ok := pickGateway(list, queue.PartitionForKey([]byte(iid), cfg.Partitions))
	if !ok {
		return "", push.Errorf(push.CodeUnavailable, "no gateway node is running, retry later")
	}
	return g.URL, nil
}

// pickGateway is the node owning partition part, else one of the live nodes (spread by
// partition), else none.
func pickGateway(list []store.Gateway, part int) (store.Gateway, bool) {
	for _, g := range list {
		if slices.Contains(g.Partitions, part) {
			return g, true
		}
	}
	if len(list) == 0 {
		return store.Gateway{}, false
	}
	return list[part%len(list)], true
}

// RegisterRouter adds GET /1.1/router, and the original's GET /v1/route. One node answers
// with its own gateway; a cluster (cfg.Gateways) with the node owning the installation's
// push.direct partition.
func (s *Server) RegisterRouter(cfg RouterConfig) {
	gc := &gatewayCache{}
	s.registerLCRouter(cfg, gc)
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
		if cfg.Gateways != nil {
			var err error
			if url, err = cfg.clusterServer(ctx, gc, c.Now, string(ctx.QueryArgs().Peek("installationId"))); err != nil {
				return err
			}
		} else if url == "" {
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
// SDK adds (installationId, secure) are accepted; a cluster routes by installationId as
// GET /1.1/router does, one node answers with its own gateway whatever the installation.
func (s *Server) registerLCRouter(cfg RouterConfig, gc *gatewayCache) {
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
		connect := cfg.URL
		if cfg.Gateways != nil {
			var err error
			if connect, err = cfg.clusterServer(ctx, gc, c.Now, string(ctx.QueryArgs().Peek("installationId"))); err != nil {
				return err
			}
		}
		if connect != "" {
			if u, err := url.Parse(connect); err == nil {
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
