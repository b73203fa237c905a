package apns

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sideshow/apns2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/h2"
)

// lean is the Client's sender/h2 transport: header blocks encoded once per push and reused
// for its targets, no per-request objects (docs/decisions.md, "Lean APNs transport").
type lean struct {
	conns  *h2.Pool
	static []byte // :authority and content-type, encoded once

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

func newLean(cfg Config, host string, cert *tls.Certificate) (*lean, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLS != nil {
		tlsCfg = cfg.TLS.Clone()
	}
	if cert != nil {
		tlsCfg.Certificates = []tls.Certificate{*cert}
	}
	hcfg := h2.Config{TLS: tlsCfg, DialTimeout: cfg.DialTimeout, RequestTimeout: cfg.RequestTimeout,
		ReadIdleTimeout: cfg.ReadIdleTimeout, PingTimeout: cfg.PingTimeout}
	conns, err := h2.NewPool("apns", host, hcfg, cfg.MaxConns, cfg.StreamsPerConn)
	if err != nil {
		return nil, err
	}
	l := &lean{conns: conns, enc: h2.NewBlockEncoder()}
	l.static = l.enc.Append(nil, ":authority", conns.Authority)
	l.static = l.enc.Append(l.static, "content-type", "application/json; charset=utf-8")
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

// sendLean is Send over the connections.
func (cl *Client) sendLean(ctx context.Context, d *push.Delivery, topic string) gateway.Reply {
	var req h2.Request
	cl.leanRequest(&req, d, topic)
	var res h2.Response
	err := cl.lean.conns.Do(ctx, &req, &res)
	return cl.leanReply(ctx, &res, err)
}

func (cl *Client) leanRequest(req *h2.Request, d *push.Delivery, topic string) {
	m := d.Message
	*req = h2.Request{Path: "/3/device/", PathSuffix: d.Target.DeviceID, Body: m.Body}
	req.Header = [3][]byte{cl.lean.static, cl.lean.block(m, topic), cl.authBlock()}
}

// CanBatch says that SendBatch sends its deliveries together.
func (cl *Client) CanBatch() bool { return true }

// leanBatches holds SendBatch's scratch.
var leanBatches = sync.Pool{New: func() any { return new(h2.Batch) }}

// SendBatch is Send of every delivery of ds at once: reps[i]
// is what Send would have answered for ds[i]. The requests go out together and their answers
// are waited for together: one wake-up and one deadline for the batch.
func (cl *Client) SendBatch(ctx context.Context, ds []*push.Delivery, reps []gateway.Reply) {
	lb := leanBatches.Get().(*h2.Batch)
	for i, d := range ds {
		topic, rep, ok := cl.topicOf(d)
		if !ok {
			reps[i] = rep
			continue
		}
		cl.leanRequest(lb.Add(i), d, topic)
	}
	lb.Do(ctx, cl.lean.conns)
	for k, i := range lb.At {
		reps[i] = cl.leanReply(ctx, &lb.Res[k], lb.Errs[k])
	}
	lb.Reset()
	leanBatches.Put(lb)
}

// leanReply is the gateway reply of one lean request's answer (err: none came).
func (cl *Client) leanReply(ctx context.Context, res *h2.Response, err error) gateway.Reply {
	if err != nil {
		return cl.lean.conns.Reply(ctx, err)
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
