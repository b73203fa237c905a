package hms

import (
	"cmp"
	"net/url"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/receipt"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// Client delivers to HMS for one profile of an app: requests of up to BatchSize tokens of one
// rendered message, over one keep-alive HTTP client (HTTP/2 where offered). Safe for
// concurrent use.
type Client struct {
	*vendor.HMSFamily[message]
}

// NewClient builds the client of a route returned by Route. It does not connect.
func (c *Credentials) NewClient(route string, cfg Config) (*Client, error) {
	p, err := c.Get(route)
	if err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	// The profile's hosts, where it names them, override the process-wide ones.
	endpoint, tokenURL := cmp.Or(p.Endpoint, cfg.Endpoint), cmp.Or(p.TokenURL, cfg.TokenURL)
	hc := vendor.NewHTTPClient(cfg.ConnConfig, cfg.TLS)
	cl := &Client{&vendor.HMSFamily[message]{
		Name:     "hms",
		URL:      strings.TrimSuffix(endpoint, "/") + "/v1/" + url.PathEscape(p.AppID) + "/messages:send",
		TS:       vendor.NewTokenSource(tokenURL, p.AppID, p.AppSecret, hc, cfg.RequestTimeout),
		HC:       hc,
		Now:      time.Now,
		Build:    buildMessage,
		Encode:   appendRequest,
		Classify: classify,
		Tag: func(m *message, d *push.Delivery) {
			m.Android.BiTag, m.Android.ReceiptID = receipt.Param(d.NotificationObjectID, d.NotificationID), p.ReceiptID
		},
	}}
	cl.Start(cfg.BatchSize, cfg.Concurrency)
	return cl, nil
}

func parseRetryAfter(v string) time.Duration { return gateway.ParseRetryAfter(v, time.Now()) }
