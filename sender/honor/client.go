package honor

import (
	"cmp"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/receipt"
	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// Client delivers to Honor for one profile of an app: requests of up to BatchSize tokens of
// one rendered message, over one keep-alive HTTP client (HTTP/2 where offered). Safe for
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
	quota := cfg.QuotaCodes
	cl := &Client{&vendor.HMSFamily[message]{
		Name:            "honor",
		URL:             strings.TrimSuffix(endpoint, "/") + "/api/v1/" + url.PathEscape(p.AppID) + "/sendMessage",
		TS:              vendor.NewTokenSource(tokenURL, p.ClientID, p.ClientSecret, hc, cfg.RequestTimeout),
		HC:              hc,
		Now:             cfg.Now,
		NameCredReasons: true,
		Build:           buildMessage,
		Encode:          appendRequest,
		Tag: func(m *message, d *push.Delivery) {
			m.Android.BiTag = receipt.Param(d.NotificationObjectID, d.NotificationID)
		},
		// Honor wants the request's time in milliseconds.
		Header: func(h http.Header, now time.Time) { h["Timestamp"] = []string{strconv.FormatInt(now.UnixMilli(), 10)} },
		Classify: func(status int, body []byte, retryAfter string, tokens []string, out []gateway.Reply) {
			classify(status, body, retryAfter, tokens, out, quota)
		},
	}}
	cl.TS.SetClock(cfg.Now)
	cl.Start(cfg.BatchSize, cfg.Concurrency)
	return cl, nil
}
