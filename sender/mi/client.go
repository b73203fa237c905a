package mi

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/receipt"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// Client delivers to Xiaomi for one profile of an app. Safe for concurrent use.
type Client struct {
	url   string
	authz string
	pkg   string
	chans vendor.ClassChannels
	hc    *http.Client
	batch *vendor.Batcher
	now   func() time.Time
	// receipts is the receipt base URL (Config.ReceiptURL), secret the profile's app secret
	// that keys the receipt token.
	receipts, secret string
}

// NewClient builds the client of a route returned by Route. It does not connect.
func (c *Credentials) NewClient(route string, cfg Config) (*Client, error) {
	p, err := c.Get(route)
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	endpoint := cmp.Or(p.Endpoint, cfg.Endpoint, Hosts[p.Region])
	cl := &Client{
		url:   strings.TrimSuffix(endpoint, "/") + "/v3/message/regid",
		authz: "key=" + p.AppSecret,
		pkg:   p.PackageName,
		chans: p.Channels,
		hc:    vendor.NewHTTPClient(cfg.ConnConfig, cfg.TLS),
		now:   time.Now,

		receipts: cfg.ReceiptURL,
		secret:   p.AppSecret,
	}
	cl.batch = vendor.NewBatcher(cfg.BatchSize, cfg.Concurrency, cl.sendBatch)
	return cl, nil
}

// Requests and Targets count the send requests made and the regIds they carried.
func (cl *Client) Requests() int64 { return cl.batch.Requests() }
func (cl *Client) Targets() int64  { return cl.batch.Targets() }

// Close closes idle connections; call it once no Send is running.
func (cl *Client) Close() { cl.hc.CloseIdleConnections() }

// Send makes one attempt to deliver d, in a request shared with other deliveries of its message.
func (cl *Client) Send(ctx context.Context, d *push.Delivery) gateway.Reply {
	return cl.batch.Send(ctx, d)
}

var formContentType = []string{"application/x-www-form-urlencoded;charset=UTF-8"}

func (cl *Client) sendBatch(ctx context.Context, msg *push.Message, ds []*push.Delivery, out []gateway.Reply) {
	f, err := fields(msg.Body, cl.pkg, cl.chans, msg.Expiration, cl.now())
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: err.Error()})
		return
	}
	// Receipts: delivered (1) and invalid targets (16), to pushd's endpoint (callback ≤ 128 B).
	if u, param := receipt.Callback(cl.receipts, push.ChannelMi, ds[0].AppID, cl.secret, maxCallback, ds[0].NotificationObjectID, ds[0].NotificationID); u != "" {
		f.Set("extra.callback", u)
		f.Set("extra.callback.param", param)
		f.Set("extra.callback.type", "17")
	}
	// regIds travel comma-joined: one holding a comma (or empty) would address other
	// devices, so it fails alone and the request carries the others (api refuses such a
	// registrationId at intake; this guards rows stored before or imported).
	ids := make([]string, 0, len(ds))
	at := make([]int, 0, len(ds))
	for i, d := range ds {
		if id := d.Target.DeviceID; !ValidRegID(id) {
			out[i] = replyBadRegID
		} else {
			ids, at = append(ids, id), append(at, i)
		}
	}
	if len(ids) == 0 {
		return
	}
	if len(ids) < len(ds) {
		sub := make([]gateway.Reply, len(ids))
		cl.post(ctx, f, ids, sub)
		for j, i := range at {
			out[i] = sub[j]
		}
		return
	}
	cl.post(ctx, f, ids, out)
}

var replyBadRegID = gateway.Reply{Kind: gateway.KindFailed, Reason: "mi regId is empty or holds a comma"}

// ValidRegID reports whether id can travel in Xiaomi's comma-joined registration_id.
func ValidRegID(id string) bool { return id != "" && !strings.Contains(id, ",") }

// post sends one request for ids (all valid) and fills out[i] for ids[i].
func (cl *Client) post(ctx context.Context, f url.Values, ids []string, out []gateway.Reply) {
	f.Set("registration_id", strings.Join(ids, ","))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.url, strings.NewReader(f.Encode()))
	if err != nil {
		fill(out, gateway.Reply{Kind: gateway.KindFailed, Reason: "bad mi endpoint"})
		return
	}
	req.Header = http.Header{"Authorization": {cl.authz}, "Content-Type": formContentType}
	res, err := cl.hc.Do(req)
	if err != nil {
		fill(out, gateway.TransportReply(err, "mi", "cannot reach mi"))
		return
	}
	defer vendor.DrainClose(res.Body)
	data, err := vendor.ReadReply(res.Body)
	if err != nil {
		fill(out, gateway.TransportReply(err, "mi", fmt.Sprintf("cannot read the mi reply (status %d)", res.StatusCode)))
		return
	}
	fill(out, classify(res.StatusCode, data, res.Header.Get("Retry-After")))
}

func fill(out []gateway.Reply, r gateway.Reply) {
	for i := range out {
		out[i] = r
	}
}

func parseRetryAfter(v string) time.Duration { return gateway.ParseRetryAfter(v, time.Now()) }
