package sim

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/sync/errgroup"
)

// Ceiling request constants: a minimal valid APNs notification. Configure the simulator to
// allow CeilingTopic if it restricts topics.
const (
	CeilingToken = "00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee"
	CeilingTopic = "com.pushd.ceiling"
)

var ceilingPayload = []byte(`{"aps":{"alert":"ceiling"}}`)

// Ceiling measures the raw request rate one HTTP/2 connection reaches against an APNs
// endpoint: n POSTs from concurrency goroutines over a single x/net/http2 client connection,
// with nothing but net/http around them. It is the "raw ceiling" a sender benchmark compares
// itself with. url is the simulator's base URL (the path defaults to /3/device/CeilingToken)
// or a full /3/device/<token> URL; auth is the authorization header value ("bearer <jwt>"),
// or "" for certificate auth through tlsCfg. Every answer must be 200.
func Ceiling(ctx context.Context, rawURL string, tlsCfg *tls.Config, auth string, n, concurrency int) (perSec float64, err error) {
	if n <= 0 || concurrency <= 0 {
		return 0, errors.New("cannot measure ceiling: n and concurrency must be positive")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return 0, fmt.Errorf("cannot measure ceiling: bad URL: %w", err)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = apnsPathPrefix + CeilingToken
	}
	target := u.String()
	tc := tlsCfg.Clone()
	tc.NextProtos = []string{"h2"}
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := (&tls.Dialer{Config: tc}).DialContext(dialCtx, "tcp", u.Host)
	cancel()
	if err != nil {
		return 0, fmt.Errorf("cannot measure ceiling: cannot dial %s: %w", u.Host, err)
	}
	if p := conn.(*tls.Conn).ConnectionState().NegotiatedProtocol; p != "h2" {
		_ = conn.Close()
		return 0, fmt.Errorf("cannot measure ceiling: %s negotiated %q, not h2", u.Host, p)
	}
	// Strict: a request waits for a free stream on this connection instead of failing.
	cc, err := (&http2.Transport{StrictMaxConcurrentStreams: true}).NewClientConn(conn)
	if err != nil {
		_ = conn.Close()
		return 0, fmt.Errorf("cannot measure ceiling: cannot start HTTP/2: %w", err)
	}
	defer cc.Close()

	var next atomic.Int64
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for range min(concurrency, n) {
		g.Go(func() error {
			for next.Add(1) <= int64(n) {
				if err := ceilingRequest(gctx, cc, target, auth); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func ceilingRequest(ctx context.Context, cc *http2.ClientConn, target, auth string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(ceilingPayload))
	if err != nil {
		return fmt.Errorf("cannot build ceiling request: %w", err)
	}
	req.ContentLength = int64(len(ceilingPayload))
	h := req.Header
	if auth != "" {
		h["Authorization"] = []string{auth}
	}
	h["Apns-Topic"] = []string{CeilingTopic}
	h["Apns-Push-Type"] = []string{"alert"}
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("cannot send ceiling request: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("cannot measure ceiling: gateway answered %d", resp.StatusCode)
	}
	return nil
}
