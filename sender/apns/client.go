package apns

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/sideshow/apns2/token"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// Client delivers to APNs for one route (one team key or certificate, one environment) over
// at most Config.MaxConns HTTP/2 connections of sender/h2, each carrying up to
// Config.StreamsPerConn streams (fewer if the server's SETTINGS say so); another connection
// opens only when every open one is full. Safe for concurrent use.
type Client struct {
	creds *Credentials
	tok   *token.Token // token auth; nil with a certificate
	lean  *lean
}

// NewClient builds the client of one route key returned by Route. It does not connect:
// connections open on first use.
func (c *Credentials) NewClient(route string, cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	parts := strings.Split(route, "/")
	env := parts[len(parts)-1]
	if len(parts) < 2 || (env != "prod" && env != "dev") {
		return nil, fmt.Errorf("cannot build apns client: bad route %q", route)
	}
	host := cfg.DevEndpoint
	if c.devURL != "" {
		host = c.devURL
	}
	if env == "prod" {
		host = cfg.ProdEndpoint
		if c.prodURL != "" {
			host = c.prodURL
		}
	}
	cl := &Client{creds: c}
	var cert *tls.Certificate
	switch {
	case parts[0] == routeTeam && len(parts) == 3:
		cl.tok = c.teams[parts[1]]
		if cl.tok == nil {
			return nil, fmt.Errorf("cannot build apns client: team %s is not configured", parts[1])
		}
	case parts[0] == routeCert && len(parts) == 2:
		cert = c.dev
		if env == "prod" {
			cert = c.prod
		}
	case parts[0] == routeProfile && len(parts) == 3:
		if pc, ok := c.profiles[parts[1]]; ok {
			cert = &pc.cert
		}
	default:
		return nil, fmt.Errorf("cannot build apns client: bad route %q", route)
	}
	if cl.tok == nil && cert == nil {
		return nil, fmt.Errorf("cannot build apns client: no certificate for route %q", route)
	}
	l, err := newLean(cfg, host, cert)
	if err != nil {
		return nil, err
	}
	cl.lean = l
	return cl, nil
}

// Conns is the number of open connections.
func (cl *Client) Conns() int { return cl.lean.conns.Len() }

// Close closes the connections; call it once no Send is running.
func (cl *Client) Close() { cl.lean.conns.Close() }

// topicOf is d's apns-topic: the request's, the installation's, or the app's default; false
// (and the failure) when token auth has none to send.
func (cl *Client) topicOf(d *push.Delivery) (string, gateway.Reply, bool) {
	topic := cmp.Or(d.Message.Topic, d.Target.Topic, cl.creds.defaultTopic)
	if topic == "" && cl.tok != nil {
		return "", gateway.Reply{Kind: gateway.KindFailed, Reason: "no apns topic: the request, the installation's apnsTopic and the app's defaultTopic are all empty"}, false
	}
	return topic, gateway.Reply{}, true
}

// Send makes one attempt to deliver d and classifies the reply. The topic is the request's,
// else the installation's apnsTopic, else the app's default topic.
func (cl *Client) Send(ctx context.Context, d *push.Delivery) gateway.Reply {
	topic, rep, ok := cl.topicOf(d)
	if !ok {
		return rep
	}
	return cl.sendLean(ctx, d, topic)
}

// tokenRefreshFloor: Apple refuses (429 TooManyProviderTokenUpdates) a new JWT less than
// 20 minutes after the previous one.
const tokenRefreshFloor = 20 * time.Minute

// expireToken makes the next request sign a fresh JWT, unless the current one is younger than
// Apple's refresh floor (then the rejection is not about age and a new token would not help).
func (cl *Client) expireToken() {
	if cl.tok == nil {
		return
	}
	cl.tok.Lock()
	defer cl.tok.Unlock()
	if time.Since(time.Unix(cl.tok.IssuedAt, 0)) >= tokenRefreshFloor {
		cl.tok.IssuedAt = 0
	}
}
