package mz

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/receipt"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// notificationPath is Meizu's notification (varnished) push by pushId.
const notificationPath = "/garcia/api/server/push/varnished/pushByPushId"

// Client delivers to Meizu for one profile of an app: signed form requests of up to
// BatchSize pushIds of one rendered message, over one keep-alive HTTP client (HTTP/2 where
// offered). Safe for concurrent use.
type Client struct {
	url    string
	appID  string
	secret string
	hc     *http.Client
	batch  *vendor.Batcher
	now    func() time.Time

	receipts string // Config.ReceiptURL
}

// NewClient builds the client of a route returned by Route. It does not connect.
func (c *Credentials) NewClient(route string, cfg Config) (*Client, error) {
	p, err := c.Get(route)
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	endpoint := cmp.Or(p.Endpoint, cfg.Endpoint, DefaultEndpoint)
	cl := &Client{
		url:    strings.TrimSuffix(endpoint, "/") + notificationPath,
		appID:  p.AppID.String(),
		secret: p.AppSecret,
		hc:     vendor.NewHTTPClient(cfg.ConnConfig, cfg.TLS),
		now:    time.Now,

		receipts: cfg.ReceiptURL,
	}
	cl.batch = vendor.NewBatcher(cfg.BatchSize, cfg.Concurrency, cl.sendBatch)
	return cl, nil
}

// Requests and Targets count the send requests made and the pushIds they carried.
func (cl *Client) Requests() int64 { return cl.batch.Requests() }
func (cl *Client) Targets() int64  { return cl.batch.Targets() }

// Close closes idle connections; call it once no Send is running.
func (cl *Client) Close() { cl.hc.CloseIdleConnections() }

// Send makes one attempt to deliver d, in a request shared with other deliveries of its
// message, and classifies the reply for d.
func (cl *Client) Send(ctx context.Context, d *push.Delivery) gateway.Reply {
	return cl.batch.Send(ctx, d)
}

var formContentType = []string{"application/x-www-form-urlencoded;charset=UTF-8"}

func (cl *Client) sendBatch(ctx context.Context, msg *push.Message, ds []*push.Delivery, out []gateway.Reply) {
	var extra map[string]string
	if u, param := receipt.Callback(cl.receipts, push.ChannelMz, ds[0].AppID, cl.secret, maxCallback, ds[0].NotificationObjectID, ds[0].NotificationID); u != "" {
		extra = map[string]string{"callback": u, "callback.param": param, "callback.type": "1"} // 1: delivered
	}
	mj, err := messageJSON(msg.Body, msg.Expiration, cl.now(), extra)
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()})
		return
	}
	// pushIds travel comma-joined: one holding a comma (or empty) would name other
	// targets, so it fails alone and the request carries the others.
	ids := make([]string, 0, len(ds))
	at := make([]int, 0, len(ds))
	for i, d := range ds {
		if id := d.Target.DeviceID; id == "" || strings.Contains(id, ",") {
			out[i] = gateway.Reply{Kind: gateway.KindFailed, Reason: "mz pushId is empty or holds a comma"}
		} else {
			ids, at = append(ids, id), append(at, i)
		}
	}
	if len(ids) == 0 {
		return
	}
	if len(ids) < len(ds) {
		sub := make([]gateway.Reply, len(ids))
		cl.post(ctx, mj, ids, sub)
		for j, i := range at {
			out[i] = sub[j]
		}
		return
	}
	cl.post(ctx, mj, ids, out)
}

// post makes one signed request for ids and classifies its reply into out.
func (cl *Client) post(ctx context.Context, mj string, ids []string, out []gateway.Reply) {
	f := url.Values{"appId": {cl.appID}, "pushIds": {strings.Join(ids, ",")}, "messageJson": {mj}}
	f.Set("sign", sign(f, cl.secret))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.url, strings.NewReader(f.Encode()))
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: "bad mz endpoint"})
		return
	}
	req.Header = http.Header{"Content-Type": formContentType}
	res, err := cl.hc.Do(req)
	if err != nil {
		fill(out, gateway.TransportReply(err, "mz", "cannot reach mz"))
		return
	}
	defer vendor.DrainClose(res.Body)
	data, err := vendor.ReadReply(res.Body)
	if err != nil {
		fill(out, gateway.TransportReply(err, "mz", fmt.Sprintf("cannot read the mz reply (status %d)", res.StatusCode)))
		return
	}
	classify(res.StatusCode, data, res.Header.Get("Retry-After"), ids, out)
}

// sign is Meizu's request signature (gateways.md §5.1): the parameters but sign sorted by
// name, each as name=value with its raw value, concatenated, the app secret appended, MD5 in
// lower-case hex.
func sign(f url.Values, secret string) string {
	names := make([]string, 0, len(f))
	for k := range f {
		if k != "sign" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	h := md5.New()
	for _, k := range names {
		_, _ = h.Write([]byte(k))
		_, _ = h.Write([]byte{'='})
		_, _ = h.Write([]byte(f.Get(k)))
	}
	_, _ = h.Write([]byte(secret))
	return hex.EncodeToString(h.Sum(nil))
}

func parseRetryAfter(v string) time.Duration { return gateway.ParseRetryAfter(v, time.Now()) }
