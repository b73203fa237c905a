package vendor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// HMSFamily is the client of an HMS-family gateway (Huawei's Push Kit, Honor's push service)
// for one profile of an app: requests of up to a batch of tokens of one rendered message (M,
// the vendor's message), under an OAuth2 bearer, over one keep-alive HTTP client. The vendor
// package gives what differs: its name, send URL, message, extra headers and reply table.
// Start it before use; it is then safe for concurrent use.
type HMSFamily[M any] struct {
	Name string // "hms", "honor": in reasons
	URL  string // the send URL
	TS   *TokenSource
	HC   *http.Client
	Now  func() time.Time // the clock of messages and headers
	// NameCredReasons prefixes a refused token's reason with Name (honor; hms's reasons
	// predate it and stay as they were).
	NameCredReasons bool

	// Build renders the message of body at now; its error's text is the reply's reason.
	Build func(body []byte, exp, now time.Time) (M, error)
	// Encode appends the send request of m to tokens.
	Encode func(dst []byte, m *M, tokens []string) ([]byte, error)
	// Tag, when set, marks the message of a request with its push (the receipt's biTag):
	// every delivery of a request belongs to one push.
	Tag func(m *M, d *push.Delivery)
	// Header adds the vendor's own headers at now to h (nil: none).
	Header func(h http.Header, now time.Time)
	// Classify fills out, one reply a token, from the gateway's reply.
	Classify func(status int, body []byte, retryAfter string, tokens []string, out []gateway.Reply)

	batch *Batcher
}

// Start readies c to send requests of up to batchSize tokens, at most concurrency at a time.
func (c *HMSFamily[M]) Start(batchSize, concurrency int) {
	c.batch = NewBatcher(batchSize, concurrency, c.sendBatch)
}

// TokensMinted counts the access tokens this client obtained.
func (c *HMSFamily[M]) TokensMinted() int64 { return c.TS.Mints() }

// Requests and Targets count the send requests made and the tokens they carried.
func (c *HMSFamily[M]) Requests() int64 { return c.batch.Requests() }
func (c *HMSFamily[M]) Targets() int64  { return c.batch.Targets() }

// Close closes idle connections; call it once no Send is running.
func (c *HMSFamily[M]) Close() { c.HC.CloseIdleConnections() }

// Send makes one attempt to deliver d, in a request shared with other deliveries of its
// message, and classifies the reply for d.
func (c *HMSFamily[M]) Send(ctx context.Context, d *push.Delivery) gateway.Reply {
	return c.batch.Send(ctx, d)
}

func (c *HMSFamily[M]) sendBatch(ctx context.Context, msg *push.Message, ds []*push.Delivery, out []gateway.Reply) {
	bearer, err := c.TS.Token(ctx)
	if err != nil {
		var ce *CredError
		switch {
		case errors.As(err, &ce):
			reason := ce.Reason
			if c.NameCredReasons {
				reason = c.Name + " " + reason
			}
			fillReplies(out, gateway.Reply{Kind: gateway.KindCredentials, Reason: reason})
		case ctx.Err() != nil:
			fillReplies(out, gateway.Reply{Kind: gateway.KindRetry, Reason: "canceled"})
		default:
			fillReplies(out, gateway.Reply{Kind: gateway.KindRetry, Reason: "cannot get an " + c.Name + " access token"})
		}
		return
	}
	now := c.Now()
	m, err := c.Build(msg.Body, msg.Expiration, now)
	if err != nil {
		fillReplies(out, gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()})
		return
	}
	if c.Tag != nil {
		c.Tag(&m, ds[0])
	}
	tokens := make([]string, len(ds))
	for i, d := range ds {
		tokens[i] = d.Target.DeviceID
	}
	body, err := c.Encode(make([]byte, 0, 512+40*len(tokens)), &m, tokens)
	if err != nil {
		fillReplies(out, gateway.Reply{Kind: gateway.KindFailed, Reason: "cannot encode the " + c.Name + " message"})
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		fillReplies(out, gateway.Reply{Kind: gateway.KindFailed, Reason: "bad " + c.Name + " endpoint"})
		return
	}
	req.Header = http.Header{"Authorization": {bearer}, "Content-Type": {"application/json"}}
	if c.Header != nil {
		c.Header(req.Header, now)
	}
	res, err := c.HC.Do(req)
	if err != nil {
		fillReplies(out, gateway.TransportReply(err, c.Name, "cannot reach "+c.Name))
		return
	}
	defer DrainClose(res.Body)
	data, err := ReadReply(res.Body)
	if err != nil {
		fillReplies(out, gateway.TransportReply(err, c.Name, fmt.Sprintf("cannot read the %s reply (status %d)", c.Name, res.StatusCode)))
		return
	}
	c.Classify(res.StatusCode, data, res.Header.Get("Retry-After"), tokens, out)
	if len(out) > 0 && out[0].Kind == gateway.KindAuth {
		c.TS.Invalidate(bearer)
	}
}

func fillReplies(out []gateway.Reply, r gateway.Reply) {
	for i := range out {
		out[i] = r
	}
}
