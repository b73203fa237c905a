package oppo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/receipt"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// Client delivers to OPPO for one profile of an app. Safe for concurrent use.
type Client struct {
	regions [2]region // China, overseas
	p       ProfileJSON
	drop    []int
	hc      *http.Client
	batch   *vendor.Batcher
	now     func() time.Time

	receipts string // Config.ReceiptURL
}

// region is one of OPPO's hosts and the auth_token it issued.
type region struct {
	base   string
	tokens *vendor.TokenCache
}

// NewClient builds the client of a route returned by Route. It does not connect.
func (c *Credentials) NewClient(route string, cfg Config) (*Client, error) {
	p, err := c.Get(route)
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	cn, intl := cfg.Endpoint, cfg.IntlEndpoint
	if p.Endpoint != "" {
		cn = p.Endpoint
	}
	if p.IntlEndpoint != "" {
		intl = p.IntlEndpoint
	}
	cl := &Client{
		p:    p,
		drop: cfg.InvalidRegIDCodes,
		hc:   vendor.NewHTTPClient(cfg.ConnConfig, cfg.TLS),
		now:  cfg.Now,

		receipts: cfg.ReceiptURL,
	}
	for i, base := range []string{cn, intl} {
		base = strings.TrimSuffix(base, "/")
		cl.regions[i] = region{base: base, tokens: vendor.NewTokenCache(cl.minter(base), cfg.TokenRefresh, cfg.RequestTimeout)}
		cl.regions[i].tokens.SetClock(cfg.Now)
	}
	cl.batch = vendor.NewBatcher(cfg.BatchSize, cfg.Concurrency, cl.sendBatch)
	return cl, nil
}

// TokensMinted counts the auth_tokens obtained, both regions together.
func (cl *Client) TokensMinted() int64 {
	return cl.regions[0].tokens.Mints() + cl.regions[1].tokens.Mints()
}

// Requests and Targets count the send requests made (per region, a batch may make two) and
// the regIds they carried.
func (cl *Client) Requests() int64 { return cl.batch.Requests() }
func (cl *Client) Targets() int64  { return cl.batch.Targets() }

// Close closes idle connections; call it once no Send is running.
func (cl *Client) Close() { cl.hc.CloseIdleConnections() }

// Send makes one attempt to deliver d, in a request shared with other deliveries of its message.
func (cl *Client) Send(ctx context.Context, d *push.Delivery) gateway.Reply {
	return cl.batch.Send(ctx, d)
}

var formContentType = []string{"application/x-www-form-urlencoded;charset=UTF-8"}

// RegionCN reports whether a regId belongs to OPPO's China service: split on "_", one part is
// China, two parts China when the first is CN, three when the second is (gateways.md §7.1).
func RegionCN(regID string) bool {
	parts := strings.Split(regID, "_")
	switch len(parts) {
	case 1:
		return true
	case 2:
		return parts[0] == "CN"
	case 3:
		return parts[1] == "CN"
	}
	return false
}

func (cl *Client) sendBatch(ctx context.Context, msg *push.Message, ds []*push.Delivery, out []gateway.Reply) {
	cbURL, cbParam := receipt.Callback(cl.receipts, push.ChannelOppo, ds[0].AppID, cl.p.MasterSecret, maxCallback, ds[0].NotificationObjectID, ds[0].NotificationID)
	notif, err := buildNotification(msg.Body, cl.p.Channels, msg.Expiration, cl.now(), cbURL, cbParam)
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()})
		return
	}
	// Split by region, keeping each delivery's index: one request per region.
	var idx [2][]int
	for i, d := range ds {
		r := 1
		if RegionCN(d.Target.DeviceID) {
			r = 0
		}
		idx[r] = append(idx[r], i)
	}
	for r := range cl.regions {
		if len(idx[r]) == 0 {
			continue
		}
		ids := make([]string, len(idx[r]))
		for j, i := range idx[r] {
			ids[j] = ds[i].Target.DeviceID
		}
		res := make([]gateway.Reply, len(ids))
		cl.sendRegion(ctx, &cl.regions[r], notif, ids, res)
		for j, i := range idx[r] {
			out[i] = res[j]
		}
	}
}

// sendRegion sends ids to one region with its auth_token, dropping the token when refused.
func (cl *Client) sendRegion(ctx context.Context, reg *region, notif []byte, ids []string, out []gateway.Reply) {
	tok, err := reg.tokens.Token(ctx)
	if err != nil {
		var ce *vendor.CredError
		switch {
		case errors.As(err, &ce):
			fill(out, gateway.Reply{Kind: gateway.KindCredentials, Reason: ce.Reason})
		case ctx.Err() != nil:
			fill(out, gateway.Reply{Kind: gateway.KindRetry, Reason: "canceled"})
		default:
			fill(out, gateway.Reply{Kind: gateway.KindRetry, Reason: "cannot get an oppo auth_token"})
		}
		return
	}
	cl.send(ctx, reg.base, tok, notif, ids, out)
	if out[0].Kind == gateway.KindAuth {
		reg.tokens.Invalidate(tok)
	}
}

// send makes one unicast (one id) or unicast_batch request to base.
func (cl *Client) send(ctx context.Context, base, tok string, notif []byte, ids []string, out []gateway.Reply) {
	form := url.Values{"auth_token": {tok}}
	path := "/server/v1/message/notification/unicast"
	batch := len(ids) > 1
	if batch {
		b := make([]byte, 0, 2+len(ids)*(len(notif)+80))
		b = append(b, '[')
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendMessage(b, id, notif)
		}
		form.Set("messages", string(append(b, ']')))
		path += "_batch"
	} else {
		form.Set("message", string(appendMessage(nil, ids[0], notif)))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: "bad oppo endpoint"})
		return
	}
	req.Header = http.Header{"Content-Type": formContentType}
	res, err := cl.hc.Do(req)
	if err != nil {
		fill(out, gateway.TransportReply(err, "oppo", "cannot reach oppo"))
		return
	}
	defer vendor.DrainClose(res.Body)
	data, err := io.ReadAll(io.LimitReader(res.Body, maxBatchReply))
	if err != nil {
		fill(out, gateway.TransportReply(err, "oppo", fmt.Sprintf("cannot read the oppo reply (status %d)", res.StatusCode)))
		return
	}
	classify(res.StatusCode, data, res.Header.Get("Retry-After"), ids, cl.drop, batch, out)
}

// maxBatchReply bounds a send reply read: a batch's answer lists up to 1000 targets (about
// 130 KB for OPPO's items), beyond sender/vendor's 64 KiB.
const maxBatchReply = 1 << 20
