package apns

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sideshow/apns2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/h2"
)

// Transports of Config.Transport.
const (
	TransportAPNs2 = "apns2" // sideshow/apns2 over net/http and x/net/http2
	TransportLean  = "lean"  // sender/h2: header blocks encoded once per push, no per-request objects

	// DefaultTransport: lean passes the client tests both transports run and costs a fifth of
	// apns2's CPU per delivery (docs/decisions.md, "Lean APNs transport").
	DefaultTransport = TransportLean
)

// notProcessedAttempts is how many times Send puts a delivery on a connection while the
// server answers "not processed" (GOAWAY, REFUSED_STREAM): sending again cannot duplicate it.
const notProcessedAttempts = 3

// lean is the Client's state for TransportLean.
type lean struct {
	conns     *gateway.Conns[*leanSlot]
	authority string
	static    []byte // :authority and content-type, encoded once

	mu   sync.Mutex // guards enc
	enc  *h2.BlockEncoder
	last atomic.Pointer[blockEntry] // the last push's header block
	auth atomic.Pointer[authEntry]  // the encoded authorization of the current JWT
}

// blockEntry is the header block of one (message, topic): apns-topic, apns-push-type,
// apns-priority, apns-expiration and apns-collapse-id, shared by all its targets.
type blockEntry struct {
	msg   *push.Message
	topic string
	block []byte
}

type authEntry struct {
	bearer string
	block  []byte
}

// leanSlot is one connection of the set, redialled when the server closed it or went away.
type leanSlot struct {
	addr string
	cfg  h2.Config

	mu sync.Mutex
	c  *h2.Conn
}

func (l *leanSlot) conn(ctx context.Context) (*h2.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil && l.c.Usable() {
		return l.c, nil
	}
	// A connection that went away is not closed here: its streams at or below the GOAWAY's
	// last-stream-id run to their answer, then it closes itself.
	l.c = nil
	c, err := h2.Dial(ctx, l.addr, l.cfg)
	if err != nil {
		return nil, err
	}
	l.c = c
	return c, nil
}

func (l *leanSlot) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		l.c.Close()
	}
}

func newLean(cfg Config, host string, cert *tls.Certificate) (*lean, error) {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("cannot build apns client: bad endpoint %q", host)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLS != nil {
		tlsCfg = cfg.TLS.Clone()
	}
	if cert != nil {
		tlsCfg.Certificates = []tls.Certificate{*cert}
	}
	hcfg := h2.Config{TLS: tlsCfg, DialTimeout: cfg.DialTimeout, RequestTimeout: cfg.RequestTimeout,
		ReadIdleTimeout: cfg.ReadIdleTimeout, PingTimeout: cfg.PingTimeout}
	l := &lean{authority: u.Host, enc: h2.NewBlockEncoder()}
	l.static = l.enc.Append(nil, ":authority", u.Host)
	l.static = l.enc.Append(l.static, "content-type", "application/json; charset=utf-8")
	dial := func() (*leanSlot, error) { return &leanSlot{addr: addr, cfg: hcfg}, nil }
	l.conns = gateway.NewBoundedConns(cfg.MaxConns, cfg.StreamsPerConn, dial, (*leanSlot).close)
	return l, nil
}

// block returns the header block of (m, topic), encoding it when the push changed.
func (l *lean) block(m *push.Message, topic string) []byte {
	if e := l.last.Load(); e != nil && e.msg == m && e.topic == topic {
		return e.block
	}
	l.mu.Lock()
	var b []byte
	if topic != "" {
		b = l.enc.Append(b, "apns-topic", topic)
	}
	if m.CollapseID != "" {
		b = l.enc.Append(b, "apns-collapse-id", m.CollapseID)
	}
	if m.Priority > 0 {
		b = l.enc.Append(b, "apns-priority", strconv.Itoa(m.Priority))
	}
	if m.Expiration.After(time.Unix(0, 0)) {
		b = l.enc.Append(b, "apns-expiration", strconv.FormatInt(m.Expiration.Unix(), 10))
	}
	pt := m.PushType
	if pt == "" {
		pt = string(apns2.PushTypeAlert)
	}
	b = l.enc.Append(b, "apns-push-type", pt)
	l.mu.Unlock()
	l.last.Store(&blockEntry{msg: m, topic: topic, block: b})
	return b
}

// authBlock returns the encoded authorization of the team's current JWT (nil: certificate).
func (cl *Client) authBlock() []byte {
	if cl.tok == nil {
		return nil
	}
	bearer := cl.tok.GenerateIfExpired()
	if e := cl.lean.auth.Load(); e != nil && e.bearer == bearer {
		return e.block
	}
	cl.lean.mu.Lock()
	b := cl.lean.enc.Append(nil, "authorization", "bearer "+bearer)
	cl.lean.mu.Unlock()
	cl.lean.auth.Store(&authEntry{bearer: bearer, block: b})
	return b
}

// sendLean is Send over TransportLean.
func (cl *Client) sendLean(ctx context.Context, d *push.Delivery, topic string) gateway.Reply {
	m := d.Message
	req := h2.Request{Path: "/3/device/", PathSuffix: d.Target.DeviceID, Body: m.Body}
	req.Header = [3][]byte{cl.lean.static, cl.lean.block(m, topic), cl.authBlock()}
	var (
		res h2.Response
		err error
	)
	for range notProcessedAttempts {
		err = cl.leanAttempt(ctx, &req, &res)
		if !errors.Is(err, h2.ErrNotProcessed) {
			break
		}
	}
	if err != nil {
		return leanTransportReply(err, ctx)
	}
	if res.Status == http.StatusOK {
		return gateway.Reply{Kind: gateway.KindSent}
	}
	var body struct {
		Reason    string `json:"reason"`
		Timestamp int64  `json:"timestamp"`
	}
	_ = json.Unmarshal(res.Body, &body) // an unreadable body classifies on the status alone
	r := classify(res.Status, body.Reason)
	switch r.Kind {
	case gateway.KindRetry:
		r.RetryAfter = gateway.ParseRetryAfter(res.RetryAfter, time.Now())
	case gateway.KindInvalidToken:
		if body.Timestamp > 0 {
			r.Since = time.Unix(body.Timestamp/1000, 0) // as apns2.Time: milliseconds, to the second
		}
	case gateway.KindAuth:
		cl.expireToken()
	}
	return r
}

func (cl *Client) leanAttempt(ctx context.Context, req *h2.Request, res *h2.Response) error {
	slot, err := cl.lean.conns.AcquireContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errLeanClosed
	}
	defer slot.Release()
	c, err := slot.C.conn(ctx)
	if err != nil {
		return &dialError{err}
	}
	return c.Do(ctx, req, res)
}

var errLeanClosed = errors.New("apns client closed")

type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// leanTransportReply classifies a lean request that got no answer. Every case is a retry;
// the reason says whether APNs may have acted on it.
func leanTransportReply(err error, ctx context.Context) gateway.Reply {
	var se *h2.StreamError
	var de *dialError
	switch {
	case errors.Is(err, errLeanClosed):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "apns client closed"}
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		return gateway.TransportReply(err, "apns", "cannot reach apns")
	case errors.Is(err, h2.ErrNotProcessed):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "apns did not process the request"}
	case errors.Is(err, h2.ErrConnLost):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "apns connection lost"}
	case errors.As(err, &se):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "apns stream reset: " + se.Code.String()}
	case errors.As(err, &de):
		return gateway.TransportReply(&url.Error{Op: "Post", URL: "apns", Err: de.err}, "apns", "cannot reach apns")
	}
	return gateway.TransportReply(err, "apns", "unreadable apns reply")
}
