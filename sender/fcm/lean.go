package fcm

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/h2"
)

// lean is the Client's sender/h2 transport: header blocks encoded once, no per-request
// objects (docs/decisions.md, "Lean FCM transport").
type lean struct {
	conns  *h2.Pool // its Path: /v1/projects/<id>/messages:send
	static []byte   // :authority and content-type, encoded once

	mu   sync.Mutex // guards enc
	enc  *h2.BlockEncoder
	auth atomic.Pointer[authEntry] // the encoded authorization of the current access token
}

type authEntry struct {
	bearer string
	block  []byte
}

func newLean(cfg Config, sendURL string) (*lean, error) {
	tlsCfg := baseTLS(cfg)
	hcfg := h2.Config{TLS: tlsCfg, DialTimeout: cfg.DialTimeout, RequestTimeout: cfg.RequestTimeout,
		ReadIdleTimeout: cfg.ReadIdleTimeout, PingTimeout: cfg.PingTimeout, MaxBody: maxErrorBody}
	conns, err := h2.NewPool("fcm", sendURL, hcfg, cfg.MaxConns, cfg.StreamsPerConn)
	if err != nil {
		return nil, err
	}
	l := &lean{conns: conns, enc: h2.NewBlockEncoder()}
	l.static = l.enc.Append(nil, ":authority", conns.Authority)
	l.static = l.enc.Append(l.static, "content-type", "application/json")
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

// sendLean is Send over the connections, after the access token.
func (cl *Client) sendLean(ctx context.Context, d *push.Delivery, bearer string) gateway.Reply {
	buf := bufs.Get().(*[]byte)
	var err error
	*buf, err = appendMessage((*buf)[:0], d.Target.DeviceID, d.Message.Body)
	if err != nil {
		bufs.Put(buf)
		return gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()}
	}
	req := h2.Request{Path: cl.lean.conns.Path, Body: *buf}
	req.Header = [3][]byte{cl.lean.static, cl.lean.authBlock(bearer)}
	res := responses.Get().(*h2.Response)
	defer responses.Put(res)
	err = cl.lean.conns.Do(ctx, &req, res)
	// The body goes back to the pool only after an answer: a request given up on (context,
	// timeout) may still be in the connection's writer, which reads the body until the reset.
	if err == nil && cap(*buf) <= 64<<10 {
		bufs.Put(buf)
	}
	return cl.leanReply(ctx, res, err, bearer)
}

// CanBatch says that SendBatch sends its deliveries together.
func (cl *Client) CanBatch() bool { return true }

// leanBatch is SendBatch's scratch, pooled.
type leanBatch struct {
	h2.Batch
	bufs []*[]byte // the bodies, from bufs: bufs[k] is Reqs[k]'s
}

var leanBatches = sync.Pool{New: func() any { return new(leanBatch) }}

// SendBatch is Send of every delivery of ds at once: reps[i]
// is what Send would have answered for ds[i]. The requests go out together and their answers
// are waited for together: one wake-up and one deadline for the batch.
func (cl *Client) SendBatch(ctx context.Context, ds []*push.Delivery, reps []gateway.Reply) {
	bearer, err := cl.ts.token(ctx)
	if err != nil {
		rep := cl.tokenReply(ctx, err)
		for i := range ds {
			reps[i] = rep
		}
		return
	}
	lb := leanBatches.Get().(*leanBatch)
	auth := cl.lean.authBlock(bearer)
	for i, d := range ds {
		buf := bufs.Get().(*[]byte)
		*buf, err = appendMessage((*buf)[:0], d.Target.DeviceID, d.Message.Body)
		if err != nil {
			bufs.Put(buf)
			reps[i] = gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()}
			continue
		}
		*lb.Add(i) = h2.Request{Path: cl.lean.conns.Path, Body: *buf, Header: [3][]byte{cl.lean.static, auth}}
		lb.bufs = append(lb.bufs, buf)
	}
	lb.Do(ctx, cl.lean.conns)
	for k, i := range lb.At {
		reps[i] = cl.leanReply(ctx, &lb.Res[k], lb.Errs[k], bearer)
		// As in sendLean: a body goes back only after an answer.
		if lb.Errs[k] == nil && cap(*lb.bufs[k]) <= 64<<10 {
			bufs.Put(lb.bufs[k])
		}
	}
	lb.Reset()
	clear(lb.bufs)
	lb.bufs = lb.bufs[:0]
	leanBatches.Put(lb)
}

// leanReply is the gateway reply of one lean request's answer (err: none came).
func (cl *Client) leanReply(ctx context.Context, res *h2.Response, err error, bearer string) gateway.Reply {
	if err != nil {
		return cl.lean.conns.Reply(ctx, err)
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
