package honor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// Client delivers to Honor for one profile of an app: requests of up to BatchSize tokens of
// one rendered message, over one keep-alive HTTP client (HTTP/2 where offered). Safe for
// concurrent use.
type Client struct {
	url   string
	ts    *vendor.TokenSource
	hc    *http.Client
	batch *vendor.Batcher
	quota []string
	now   func() time.Time
}

// NewClient builds the client of a route returned by Route. It does not connect.
func (c *Credentials) NewClient(route string, cfg Config) (*Client, error) {
	p, err := c.Get(route)
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	endpoint, tokenURL := cfg.Endpoint, cfg.TokenURL
	if p.Endpoint != "" {
		endpoint = p.Endpoint
	}
	if p.TokenURL != "" {
		tokenURL = p.TokenURL
	}
	hc := vendor.NewHTTPClient(cfg.ConnConfig, cfg.TLS)
	cl := &Client{
		url:   strings.TrimSuffix(endpoint, "/") + "/api/v1/" + url.PathEscape(p.AppID) + "/sendMessage",
		ts:    vendor.NewTokenSource(tokenURL, p.ClientID, p.ClientSecret, hc, cfg.RequestTimeout),
		hc:    hc,
		quota: cfg.QuotaCodes,
		now:   cfg.Now,
	}
	cl.ts.SetClock(cfg.Now)
	cl.batch = vendor.NewBatcher(cfg.BatchSize, cfg.Concurrency, cl.sendBatch)
	return cl, nil
}

// TokensMinted counts the access tokens this client obtained.
func (cl *Client) TokensMinted() int64 { return cl.ts.Mints() }

// Requests and Targets count the send requests made and the tokens they carried.
func (cl *Client) Requests() int64 { return cl.batch.Requests() }
func (cl *Client) Targets() int64  { return cl.batch.Targets() }

// Close closes idle connections; call it once no Send is running.
func (cl *Client) Close() { cl.hc.CloseIdleConnections() }

// Send makes one attempt to deliver d, in a request shared with other deliveries of its
// message, and classifies the reply for d.
func (cl *Client) Send(ctx context.Context, d *push.Delivery) gateway.Reply {
	return cl.batch.Send(ctx, d)
}

func (cl *Client) sendBatch(ctx context.Context, msg *push.Message, ds []*push.Delivery, out []gateway.Reply) {
	bearer, err := cl.ts.Token(ctx)
	if err != nil {
		var ce *vendor.CredError
		switch {
		case errors.As(err, &ce):
			fill(out, gateway.Reply{Kind: gateway.KindCredentials, Reason: "honor " + ce.Reason})
		case ctx.Err() != nil:
			fill(out, gateway.Reply{Kind: gateway.KindRetry, Reason: "canceled"})
		default:
			fill(out, gateway.Reply{Kind: gateway.KindRetry, Reason: "cannot get an honor access token"})
		}
		return
	}
	now := cl.now()
	m, err := buildMessage(msg.Body, msg.Expiration, now)
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()})
		return
	}
	tokens := make([]string, len(ds))
	for i, d := range ds {
		tokens[i] = d.Target.DeviceID
	}
	body, err := appendRequest(make([]byte, 0, 512+40*len(tokens)), &m, tokens)
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: "cannot encode the honor message"})
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.url, bytes.NewReader(body))
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: "bad honor endpoint"})
		return
	}
	req.Header = http.Header{
		"Authorization": {bearer},
		"Content-Type":  {"application/json"},
		"Timestamp":     {strconv.FormatInt(now.UnixMilli(), 10)},
	}
	res, err := cl.hc.Do(req)
	if err != nil {
		fill(out, gateway.TransportReply(err, "honor", "cannot reach honor"))
		return
	}
	defer vendor.DrainClose(res.Body)
	data, err := vendor.ReadReply(res.Body)
	if err != nil {
		fill(out, gateway.TransportReply(err, "honor", fmt.Sprintf("cannot read the honor reply (status %d)", res.StatusCode)))
		return
	}
	classify(res.StatusCode, data, res.Header.Get("Retry-After"), tokens, out, cl.quota)
	if len(out) > 0 && out[0].Kind == gateway.KindAuth {
		cl.ts.Invalidate(bearer)
	}
}
