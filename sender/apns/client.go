package apns

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/token"
	"golang.org/x/net/http2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// Client delivers to APNs for one route (one team key or certificate, one environment) over
// at most Config.MaxConns HTTP/2 connections, each an apns2.Client with its own transport
// (StrictMaxConcurrentStreams: one connection per transport, requests wait for a free stream).
// Requests go to the connection with the fewest in flight; another connection is opened only
// when every open one carries Config.StreamsPerConn requests. Safe for concurrent use.
type Client struct {
	creds *Credentials
	tok   *token.Token                  // token auth; nil with a certificate
	conns *gateway.Conns[*apns2.Client] // TransportAPNs2
	lean  *lean                         // TransportLean
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
	if cfg.Transport == TransportLean {
		l, err := newLean(cfg, host, cert)
		if err != nil {
			return nil, err
		}
		cl.lean = l
		return cl, nil
	}
	dial := func() (*apns2.Client, error) { return newConn(cfg, host, cl.tok, cert), nil }
	cl.conns = gateway.NewBoundedConns(cfg.MaxConns, cfg.StreamsPerConn, dial, func(a *apns2.Client) { a.CloseIdleConnections() })
	return cl, nil
}

// newConn builds one apns2.Client whose transport holds a single HTTP/2 connection.
func newConn(cfg Config, host string, tok *token.Token, cert *tls.Certificate) *apns2.Client {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLS != nil {
		tlsCfg = cfg.TLS.Clone()
	}
	if cert != nil {
		tlsCfg.Certificates = []tls.Certificate{*cert}
	}
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: apns2.TCPKeepAlive}}
	tr := &http2.Transport{
		TLSClientConfig: tlsCfg,
		DialTLSContext: func(ctx context.Context, network, addr string, c *tls.Config) (net.Conn, error) {
			d := *dialer
			d.Config = c
			return d.DialContext(ctx, network, addr)
		},
		ReadIdleTimeout: cfg.ReadIdleTimeout,
		PingTimeout:     cfg.PingTimeout,
		// Not StrictMaxConcurrentStreams: with more callers than the server's limit (APNs allows
		// one stream on a fresh token-auth connection) it stalls the connection until the
		// request timeout (golang/go#70809, as in sender/fcm newConn). The bounded Conns keeps
		// callers per connection at StreamsPerConn; above the server's limit the transport
		// opens another connection rather than wait.
	}
	a := &apns2.Client{
		Host:       host,
		Token:      tok,
		HTTPClient: &http.Client{Transport: retryAfterTransport{tr}, Timeout: cfg.RequestTimeout},
	}
	if cert != nil {
		a.Certificate = *cert
	}
	return a
}

// retryAfterTransport records the reply's Retry-After into the holder the request context
// carries: apns2.Response does not expose headers.
type retryAfterTransport struct{ tr *http2.Transport }

type retryAfterKey struct{}

func (t retryAfterTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.tr.RoundTrip(r)
	if err == nil && res.StatusCode != http.StatusOK {
		if h, ok := r.Context().Value(retryAfterKey{}).(*time.Duration); ok {
			*h = gateway.ParseRetryAfter(res.Header.Get("Retry-After"), time.Now())
		}
	}
	return res, err
}

func (t retryAfterTransport) CloseIdleConnections() { t.tr.CloseIdleConnections() }

// Conns is the number of open connections.
func (cl *Client) Conns() int {
	if cl.lean != nil {
		return cl.lean.conns.Len()
	}
	return cl.conns.Len()
}

// Close closes the connections; call it once no Send is running.
func (cl *Client) Close() {
	if cl.lean != nil {
		cl.lean.conns.Close()
		return
	}
	cl.conns.Close()
}

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
	m := d.Message
	topic, rep, ok := cl.topicOf(d)
	if !ok {
		return rep
	}
	if cl.lean != nil {
		return cl.sendLean(ctx, d, topic)
	}
	n := &apns2.Notification{
		DeviceToken: d.Target.DeviceID,
		Topic:       topic,
		Payload:     m.Body,
		Priority:    m.Priority,
		PushType:    apns2.EPushType(m.PushType),
		CollapseID:  m.CollapseID,
		Expiration:  m.Expiration,
	}
	conn, err := cl.conns.AcquireContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return gateway.TransportReply(ctx.Err(), "apns", "cannot reach apns")
		}
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "apns client closed"}
	}
	defer conn.Release()
	var retryAfter time.Duration
	res, err := conn.C.PushWithContext(context.WithValue(ctx, retryAfterKey{}, &retryAfter), n)
	if err != nil {
		return gateway.TransportReply(err, "apns", "unreadable apns reply")
	}
	r := classify(res.StatusCode, res.Reason)
	switch r.Kind {
	case gateway.KindRetry:
		r.RetryAfter = retryAfter
	case gateway.KindInvalidToken:
		r.Since = res.Timestamp.Time // zero unless a 410 says when
	}
	if r.Kind == gateway.KindAuth {
		cl.expireToken()
	}
	return r
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
