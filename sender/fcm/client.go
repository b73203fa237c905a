package fcm

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// Client delivers to FCM for one app over at most Config.MaxConns HTTP/2 connections of
// sender/h2, opening another only when every open one carries Config.StreamsPerConn requests
// (fewer if the server's SETTINGS say so); a Send beyond that waits for a free stream. Safe
// for concurrent use.
type Client struct {
	url     string
	ts      *tokenSource
	tokenHC *http.Client
	lean    *lean
}

// NewClient builds the client of the route returned by Route. It does not connect:
// connections open, and the first access token is minted, on first use.
func (c *Credentials) NewClient(route string, cfg Config) (*Client, error) {
	if want, _ := c.Route(nil); route != want {
		return nil, fmt.Errorf("cannot build fcm client: bad route %q", route)
	}
	cfg = cfg.WithDefaults()
	endpoint := cfg.Endpoint
	if c.endpoint != "" {
		endpoint = c.endpoint
	}
	tokenURL := c.tokenURI
	if cfg.TokenURL != "" {
		tokenURL = cfg.TokenURL
	}
	tokenHC := &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:     baseTLS(cfg),
			ForceAttemptHTTP2:   true,
			DialContext:         (&net.Dialer{Timeout: cfg.DialTimeout}).DialContext,
			TLSHandshakeTimeout: cfg.DialTimeout,
			IdleConnTimeout:     time.Minute,
		},
		Timeout: cfg.RequestTimeout,
	}
	cl := &Client{
		url: strings.TrimSuffix(endpoint, "/") + "/v1/projects/" + url.PathEscape(c.projectID) + "/messages:send",
		ts: &tokenSource{
			email: c.email, keyID: c.keyID, tokenURL: tokenURL, key: c.key,
			hc: tokenHC, timeout: cfg.RequestTimeout, now: time.Now,
		},
		tokenHC: tokenHC,
	}
	l, err := newLean(cfg, cl.url)
	if err != nil {
		return nil, err
	}
	cl.lean = l
	return cl, nil
}

func baseTLS(cfg Config) *tls.Config {
	if cfg.TLS != nil {
		return cfg.TLS.Clone()
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

// Conns is the number of open connections.
func (cl *Client) Conns() int { return cl.lean.conns.Len() }

// TokensMinted counts the access tokens this client obtained.
func (cl *Client) TokensMinted() int64 { return cl.ts.mints.Load() }

// Close closes the connections; call it once no Send is running.
func (cl *Client) Close() {
	cl.lean.conns.Close()
	cl.tokenHC.CloseIdleConnections()
}

// tokenReply is the reply of a delivery for which no access token could be had (err).
func (cl *Client) tokenReply(ctx context.Context, err error) gateway.Reply {
	var ce *credError
	switch {
	case errors.As(err, &ce):
		return gateway.Reply{Kind: gateway.KindCredentials, Reason: ce.reason}
	case ctx.Err() != nil:
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "canceled"}
	}
	return gateway.Reply{Kind: gateway.KindRetry, Reason: "cannot get an oauth2 access token"}
}

// Send makes one attempt to deliver d and classifies the reply.
func (cl *Client) Send(ctx context.Context, d *push.Delivery) gateway.Reply {
	bearer, err := cl.ts.token(ctx)
	if err != nil {
		return cl.tokenReply(ctx, err)
	}
	return cl.sendLean(ctx, d, bearer)
}

// quotaBackoff is the least wait after QUOTA_EXCEEDED without Retry-After: Google asks for
// exponential backoff starting at one minute for project and topic quotas (gateways.md §2.3).
const quotaBackoff = time.Minute

// maxErrorBody bounds the error reply we read: Google's are a few hundred bytes.
const maxErrorBody = 64 << 10

// maxDrain bounds what drainClose reads from a reply nobody needs: a success is
// {"name": ...}; anything larger is not worth reading, and Close resets the stream and returns
// the unread bytes to the connection window anyway.
const maxDrain = 256 << 10

// drainClose reads rc to its end (up to maxDrain) and closes it.
func drainClose(rc io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, maxDrain))
	_ = rc.Close()
}
