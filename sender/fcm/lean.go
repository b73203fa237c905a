package fcm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/h2"
)

// Transports of Config.Transport.
const (
	TransportStd  = "std"  // net/http requests over x/net/http2's transport
	TransportLean = "lean" // sender/h2: header blocks encoded once, no per-request objects

	// DefaultTransport: lean passes the client tests both transports run and costs less CPU
	// per delivery (docs/decisions.md, "Lean FCM transport").
	DefaultTransport = TransportLean
)

// notProcessedAttempts is how many times Send puts a delivery on a connection while the
// server answers "not processed" (GOAWAY, REFUSED_STREAM): sending again cannot duplicate it.
const notProcessedAttempts = 3

// lean is the Client's state for TransportLean.
type lean struct {
	conns  *gateway.Conns[*leanSlot]
	path   string // /v1/projects/<id>/messages:send
	static []byte // :authority and content-type, encoded once

	mu   sync.Mutex // guards enc
	enc  *h2.BlockEncoder
	auth atomic.Pointer[authEntry] // the encoded authorization of the current access token
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

func newLean(cfg Config, sendURL string) (*lean, error) {
	u, err := url.Parse(sendURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("cannot build fcm client: bad endpoint %q", sendURL)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	tlsCfg := baseTLS(cfg)
	hcfg := h2.Config{TLS: tlsCfg, DialTimeout: cfg.DialTimeout, RequestTimeout: cfg.RequestTimeout,
		ReadIdleTimeout: cfg.ReadIdleTimeout, PingTimeout: cfg.PingTimeout, MaxBody: maxErrorBody}
	l := &lean{path: u.EscapedPath(), enc: h2.NewBlockEncoder()}
	l.static = l.enc.Append(nil, ":authority", u.Host)
	l.static = l.enc.Append(l.static, "content-type", "application/json")
	dial := func() (*leanSlot, error) { return &leanSlot{addr: addr, cfg: hcfg}, nil }
	l.conns = gateway.NewBoundedConns(cfg.MaxConns, cfg.StreamsPerConn, dial, (*leanSlot).close)
	return l, nil
}

// authBlock returns the encoded authorization header of bearer, encoding it when the access
// token changed.
func (l *lean) authBlock(bearer string) []byte {
	if e := l.auth.Load(); e != nil && e.bearer == bearer {
		return e.block
	}
	l.mu.Lock()
	b := l.enc.Append(nil, "authorization", bearer)
	l.mu.Unlock()
	l.auth.Store(&authEntry{bearer: bearer, block: b})
	return b
}

// sendLean is Send over TransportLean, after the access token.
func (cl *Client) sendLean(ctx context.Context, d *push.Delivery, bearer string) gateway.Reply {
	buf := bufs.Get().(*[]byte)
	var err error
	*buf, err = appendMessage((*buf)[:0], d.Target.DeviceID, d.Message.Body)
	if err != nil {
		bufs.Put(buf)
		return gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()}
	}
	req := h2.Request{Path: cl.lean.path, Body: *buf}
	req.Header = [3][]byte{cl.lean.static, cl.lean.authBlock(bearer)}
	res := responses.Get().(*h2.Response)
	defer responses.Put(res)
	for range notProcessedAttempts {
		err = cl.leanAttempt(ctx, &req, res)
		if !errors.Is(err, h2.ErrNotProcessed) {
			break
		}
	}
	// The body goes back to the pool only after an answer: a request given up on (context,
	// timeout) may still be in the connection's writer, which reads the body until the reset.
	if err == nil && cap(*buf) <= 64<<10 {
		bufs.Put(buf)
	}
	if err != nil {
		return leanTransportReply(err, ctx)
	}
	if res.Status == http.StatusOK {
		return gateway.Reply{Kind: gateway.KindSent}
	}
	r := classify(res.Status, res.Body)
	switch r.Kind {
	case gateway.KindRetry:
		r.RetryAfter = gateway.ParseRetryAfter(res.RetryAfter, time.Now())
		if r.RetryAfter == 0 && r.Reason == ErrQuotaExceeded {
			r.RetryAfter = quotaBackoff
		}
	case gateway.KindAuth:
		cl.ts.invalidate(bearer)
	}
	return r
}

// responses holds Responses between sends, so an error body's buffer is reused.
var responses = sync.Pool{New: func() any { return new(h2.Response) }}

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

var errLeanClosed = errors.New("fcm client closed")

type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// leanTransportReply classifies a lean request that got no answer. Every case is a retry;
// the reason says whether FCM may have acted on it.
func leanTransportReply(err error, ctx context.Context) gateway.Reply {
	var se *h2.StreamError
	var de *dialError
	switch {
	case errors.Is(err, errLeanClosed):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "fcm client closed"}
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		return gateway.TransportReply(err, "fcm", "cannot reach fcm")
	case errors.Is(err, h2.ErrNotProcessed):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "fcm did not process the request"}
	case errors.Is(err, h2.ErrConnLost):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "fcm connection lost"}
	case errors.As(err, &se):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "fcm stream reset: " + se.Code.String()}
	case errors.As(err, &de):
		return gateway.TransportReply(&url.Error{Op: "Post", URL: "fcm", Err: de.err}, "fcm", "cannot reach fcm")
	}
	return gateway.TransportReply(err, "fcm", "unreadable fcm reply")
}
