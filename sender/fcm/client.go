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

	"golang.org/x/net/http2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// Client delivers to FCM for one app over Config.MaxConns HTTP/2 transports, opening another
// only when every open one carries Config.StreamsPerConn requests, and never handing one more
// than that: a Send beyond MaxConns*StreamsPerConn waits for a free stream (see newConn for
// why the transport must not queue them). Safe for concurrent use.
type Client struct {
	url     string
	ts      *tokenSource
	tokenHC *http.Client
	conns   *gateway.Conns[*http.Client] // TransportStd
	lean    *lean                        // TransportLean
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
	if cfg.Transport == TransportLean {
		l, err := newLean(cfg, cl.url)
		if err != nil {
			return nil, err
		}
		cl.lean = l
		return cl, nil
	}
	dial := func() (*http.Client, error) { return newConn(cfg), nil }
	cl.conns = gateway.NewBoundedConns(cfg.MaxConns, cfg.StreamsPerConn, dial, func(h *http.Client) { h.CloseIdleConnections() })
	return cl, nil
}

func baseTLS(cfg Config) *tls.Config {
	if cfg.TLS != nil {
		return cfg.TLS.Clone()
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

// newConn builds one http.Client whose HTTP/2 transport holds a single connection while the
// server allows Config.StreamsPerConn streams on it.
//
// No StrictMaxConcurrentStreams: with it, every request reserves a stream slot on the
// connection before it queues for the connection's header lock, and the request holding that
// lock waits until active streams plus reservations drop below the server's limit. Given more
// callers than the limit, the queued callers' reservations alone reach it once the active
// streams finish, and the connection stalls, the server idle, until the request timeout
// (golang/go#70809; the 30 s fan-out stalls and duplicate deliveries of the 100k load test).
// Conns bounds the callers per transport to StreamsPerConn instead; a server advertising fewer
// streams than that gets a second connection from the transport rather than a stall.
func newConn(cfg Config) *http.Client {
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 15 * time.Second}}
	return &http.Client{
		Transport: &http2.Transport{
			TLSClientConfig: baseTLS(cfg),
			DialTLSContext: func(ctx context.Context, network, addr string, c *tls.Config) (net.Conn, error) {
				d := *dialer
				d.Config = c
				return d.DialContext(ctx, network, addr)
			},
			ReadIdleTimeout: cfg.ReadIdleTimeout,
			PingTimeout:     cfg.PingTimeout,
		},
		Timeout: cfg.RequestTimeout,
	}
}

// Conns is the number of open connections.
func (cl *Client) Conns() int {
	if cl.lean != nil {
		return cl.lean.conns.Len()
	}
	return cl.conns.Len()
}

// TokensMinted counts the access tokens this client obtained.
func (cl *Client) TokensMinted() int64 { return cl.ts.mints.Load() }

// Close closes the connections; call it once no Send is running.
func (cl *Client) Close() {
	if cl.lean != nil {
		cl.lean.conns.Close()
	} else {
		cl.conns.Close()
	}
	cl.tokenHC.CloseIdleConnections()
}

var jsonContentType = []string{"application/json"}

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
	if cl.lean != nil {
		return cl.sendLean(ctx, d, bearer)
	}
	pl := newPayload()
	defer pl.release()
	*pl.buf, err = appendMessage((*pl.buf)[:0], d.Target.DeviceID, d.Message.Body)
	if err != nil {
		return gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.url, nil)
	if err != nil {
		return gateway.Reply{Kind: gateway.KindFailed, Reason: "bad fcm endpoint"}
	}
	req.ContentLength = int64(len(*pl.buf))
	// GetBody lets the transport replay a stream the server refused unprocessed
	// (REFUSED_STREAM, e.g. requests sent on a new connection before its SETTINGS announced
	// fewer streams than we assumed) instead of failing it.
	req.GetBody = pl.getBody
	req.Header = http.Header{"Authorization": {bearer}, "Content-Type": jsonContentType}

	conn, err := cl.conns.AcquireContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return gateway.TransportReply(ctx.Err(), "fcm", "cannot reach fcm")
		}
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "fcm client closed"}
	}
	defer conn.Release()
	req.Body = pl.body()
	res, err := conn.C.Do(req) // closes req.Body on every path
	if err != nil {
		return gateway.TransportReply(err, "fcm", "cannot reach fcm")
	}
	// Every path reads the body to its end (bounded) and closes it, so the stream ends
	// cleanly and its unread bytes go back to the connection's flow-control window.
	defer drainClose(res.Body)
	if res.StatusCode == http.StatusOK {
		return gateway.Reply{Kind: gateway.KindSent}
	}
	data, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	r := classify(res.StatusCode, data)
	switch r.Kind {
	case gateway.KindRetry:
		r.RetryAfter = gateway.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
		if r.RetryAfter == 0 && r.Reason == ErrQuotaExceeded {
			r.RetryAfter = quotaBackoff
		}
	case gateway.KindAuth:
		cl.ts.invalidate(bearer)
	}
	return r
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
