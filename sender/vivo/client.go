package vivo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/receipt"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// Client delivers to vivo for one profile of an app. Safe for concurrent use.
type Client struct {
	base   string
	p      ProfileJSON
	hc     *http.Client
	tokens *vendor.TokenCache
	batch  *vendor.Batcher
	now    func() time.Time

	mu    sync.Mutex
	tasks map[*push.Message]*task // saved list payloads, guarded by mu
	// noListUntil: saveListPayload's daily count is spent (10252); batches go out as single
	// sends until then. Guarded by mu.
	noListUntil time.Time

	saves atomic.Int64

	receipts string // Config.ReceiptURL
}

// task is the saved list payload of one rendered message; mu serialises its saving so that
// concurrent batches of the message save it once.
type task struct {
	mu sync.Mutex
	id string
}

// maxTasks bounds the remembered taskIds: one per rendered message being fanned out.
const maxTasks = 256

// NewClient builds the client of a route returned by Route. It does not connect.
func (c *Credentials) NewClient(route string, cfg Config) (*Client, error) {
	p, err := c.Get(route)
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	endpoint := cfg.Endpoint
	if p.Endpoint != "" {
		endpoint = p.Endpoint
	}
	cl := &Client{
		base:  strings.TrimSuffix(endpoint, "/"),
		p:     p,
		hc:    vendor.NewHTTPClient(cfg.ConnConfig, cfg.TLS),
		now:   cfg.Now,
		tasks: make(map[*push.Message]*task),

		receipts: cfg.ReceiptURL,
	}
	cl.tokens = vendor.NewTokenCache(cl.mint, cfg.TokenRefresh, cfg.RequestTimeout)
	cl.tokens.SetClock(cfg.Now)
	cl.batch = vendor.NewBatcher(cfg.BatchSize, cfg.Concurrency, cl.sendBatch)
	return cl, nil
}

// TokensMinted counts the authTokens obtained; Saves the list payloads saved.
func (cl *Client) TokensMinted() int64 { return cl.tokens.Mints() }
func (cl *Client) Saves() int64        { return cl.saves.Load() }

// Requests and Targets count the send requests (send, pushToList) and the regIds they carried.
func (cl *Client) Requests() int64 { return cl.batch.Requests() }
func (cl *Client) Targets() int64  { return cl.batch.Targets() }

// SetClock replaces the client's clock (tests: token age, timestamps).
func (cl *Client) SetClock(now func() time.Time) { cl.now = now; cl.tokens.SetClock(now) }

// Close closes idle connections; call it once no Send is running.
func (cl *Client) Close() { cl.hc.CloseIdleConnections() }

// Send makes one attempt to deliver d, in a request shared with other deliveries of its message.
func (cl *Client) Send(ctx context.Context, d *push.Delivery) gateway.Reply {
	return cl.batch.Send(ctx, d)
}

func (cl *Client) sendBatch(ctx context.Context, msg *push.Message, ds []*push.Delivery, out []gateway.Reply) {
	tok, err := cl.tokens.Token(ctx)
	if err != nil {
		fill(out, tokenReply(ctx, err))
		return
	}
	m, err := buildMessage(msg.Body, cl.p.AppID, msg.Expiration, cl.now())
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()})
		return
	}
	defer func() {
		for _, r := range out {
			if r.Kind == gateway.KindAuth {
				cl.tokens.Invalidate(tok)
				return
			}
		}
	}()
	if len(ds) > 1 && cl.listAllowed() {
		id, rep := cl.task(ctx, tok, msg, m)
		switch {
		case id != "":
			cl.pushToList(ctx, tok, id, m.PushMode, ds, out)
			return
		case rep != codes[CodePayloadQuota]:
			fill(out, rep)
			return
		}
		// 10252: no list payload today; the batch goes out as single sends.
	}
	if u, param := receipt.Callback(cl.receipts, push.ChannelVivo, ds[0].AppID, cl.p.AppSecret, maxCallback, ds[0].NotificationObjectID, ds[0].NotificationID); u != "" {
		m.Extra = map[string]string{"callback": u, "callback.param": param}
	}
	for i, d := range ds {
		m.RegID = d.Target.DeviceID
		out[i] = cl.sendOne(ctx, tok, m)
		if out[i].Kind == gateway.KindAuth || out[i].Kind == gateway.KindQuota || out[i].Kind == gateway.KindCredentials {
			fill(out[i+1:], out[i]) // app-wide: the others would get the same
			return
		}
	}
}

// tokenReply is the outcome of a request that got no authToken.
func tokenReply(ctx context.Context, err error) gateway.Reply {
	var ce *vendor.CredError
	switch {
	case errors.As(err, &ce):
		return gateway.Reply{Kind: gateway.KindCredentials, Reason: ce.Reason}
	case ctx.Err() != nil:
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "canceled"}
	}
	return gateway.Reply{Kind: gateway.KindRetry, Reason: "cannot get a vivo authToken"}
}

func (cl *Client) listAllowed() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return !cl.now().Before(cl.noListUntil)
}

// task returns the taskId of msg's saved list payload, saving it on first use; on failure
// the reply says why (10252, the list payloads' daily count spent, also stops list pushes until
// the day ends).
func (cl *Client) task(ctx context.Context, tok string, msg *push.Message, m message) (string, gateway.Reply) {
	cl.mu.Lock()
	t := cl.tasks[msg]
	if t == nil {
		if len(cl.tasks) >= maxTasks {
			for k := range cl.tasks { // forget one: a message that needs it again saves anew
				delete(cl.tasks, k)
				break
			}
		}
		t = &task{}
		cl.tasks[msg] = t
	}
	cl.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.id != "" {
		return t.id, gateway.Reply{}
	}
	m.RegID, m.RequestID = "", requestID()
	r, rep, ok := cl.post(ctx, tok, "/message/saveListPayload", m)
	if !ok {
		if rep == codes[CodePayloadQuota] {
			cl.mu.Lock()
			cl.noListUntil = nextChinaDay(cl.now())
			cl.mu.Unlock()
		}
		return "", rep
	}
	if r.TaskID == "" {
		return "", gateway.Reply{Kind: gateway.KindRetry, Reason: "vivo saveListPayload reply without a taskId"}
	}
	cl.saves.Add(1)
	t.id = r.TaskID
	return t.id, gateway.Reply{}
}

// nextChinaDay is the start of the next day in China Standard Time, when vivo's daily counts
// are taken to reset [unconfirmed].
func nextChinaDay(now time.Time) time.Time {
	y, mo, d := now.In(chinaTime).Date()
	return time.Date(y, mo, d+1, 0, 0, 0, 0, chinaTime)
}

var chinaTime = time.FixedZone("CST", 8*3600)

type listRequest struct {
	AppID     json.Number `json:"appId"`
	RegIDs    []string    `json:"regIds"`
	TaskID    string      `json:"taskId"`
	RequestID string      `json:"requestId"`
	PushMode  int         `json:"pushMode"`
}

func (cl *Client) pushToList(ctx context.Context, tok, taskID string, pushMode int, ds []*push.Delivery, out []gateway.Reply) {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.Target.DeviceID
	}
	status, data, rep, ok := cl.do(ctx, tok, "/message/pushToList",
		listRequest{AppID: cl.p.AppID, RegIDs: ids, TaskID: taskID, RequestID: requestID(), PushMode: pushMode})
	if !ok {
		fill(out, rep)
		return
	}
	classifyList(status, data, "", ids, out)
}

func (cl *Client) sendOne(ctx context.Context, tok string, m message) gateway.Reply {
	m.RequestID = requestID()
	_, rep, _ := cl.post(ctx, tok, "/message/send", m)
	return rep
}

// post makes one request and parses its answer.
func (cl *Client) post(ctx context.Context, tok, path string, v any) (sendReply, gateway.Reply, bool) {
	status, data, rep, ok := cl.do(ctx, tok, path, v)
	if !ok {
		return sendReply{}, rep, false
	}
	return parse(status, data, "")
}

// do makes one request; ok false with the reply when no answer came. A Retry-After of a
// non-200 answer is honoured by parse through the status path.
func (cl *Client) do(ctx context.Context, tok, path string, v any) (int, []byte, gateway.Reply, bool) {
	body, err := json.Marshal(v)
	if err != nil {
		return 0, nil, gateway.Reply{Kind: gateway.KindFailed, Reason: "cannot encode the vivo message"}, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, gateway.Reply{Kind: gateway.KindFailed, Reason: "bad vivo endpoint"}, false
	}
	req.Header = http.Header{"authToken": {tok}, "Content-Type": {"application/json"}}
	res, err := cl.hc.Do(req)
	if err != nil {
		return 0, nil, gateway.TransportReply(err, "vivo", "cannot reach vivo"), false
	}
	defer vendor.DrainClose(res.Body)
	data, err := io.ReadAll(io.LimitReader(res.Body, maxBatchReply))
	if err != nil {
		return 0, nil, gateway.TransportReply(err, "vivo", fmt.Sprintf("cannot read the vivo reply (status %d)", res.StatusCode)), false
	}
	if res.StatusCode != http.StatusOK {
		_, rep, _ := parse(res.StatusCode, data, res.Header.Get("Retry-After"))
		return 0, nil, rep, false
	}
	return res.StatusCode, data, gateway.Reply{}, true
}

// requestID is a unique requestId (vivo refuses a repeated one): 32 hex characters.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// maxBatchReply bounds a send reply read: a batch's answer lists up to 1000 targets (about
// 130 KB for OPPO's items), beyond sender/vendor's 64 KiB.
const maxBatchReply = 1 << 20
