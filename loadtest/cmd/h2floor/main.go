// Command h2floor is the load test's Go floor: the least a Go program does to send APNs
// requests over HTTP/2 (golang.org/x/net/http2's Transport, one per connection, a fixed
// request shape, bodies and headers built once). The driver runs it against the same APNs
// simulator pushd sent to and compares pushd's CPU per delivery with this process's CPU per
// request. It prints one JSON line: {"requests":n,"ok":k,"seconds":s}.
//
//	h2floor -url https://127.0.0.1:port -tokens tokens.txt -n 100000 -c 2 -m 100 \
//	    -header "authorization: bearer ..." -header "apns-topic: ..." -body body.json -ca ca.pem
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "h2floor:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("h2floor", flag.ContinueOnError)
	base := fs.String("url", "", "base URL of the APNs simulator (https://host:port)")
	tokensFile := fs.String("tokens", "", "file of device tokens, one per line, used in turn")
	n := fs.Int("n", 10000, "requests to send")
	conns := fs.Int("c", 2, "HTTP/2 connections")
	streams := fs.Int("m", 100, "requests in flight per connection")
	bodyFile := fs.String("body", "", "file holding the request body")
	caFile := fs.String("ca", "", "PEM bundle the simulator's certificate chains to")
	var hdrs headers
	fs.Var(&hdrs, "header", `request header "name: value" (repeatable)`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" || *tokensFile == "" || *bodyFile == "" || *caFile == "" || *n < 1 || *conns < 1 || *streams < 1 {
		return errors.New("-url, -tokens, -body and -ca are required; -n, -c and -m must be positive")
	}
	raw, err := os.ReadFile(*tokensFile)
	if err != nil {
		return fmt.Errorf("cannot read the tokens: %w", err)
	}
	tokens := strings.Fields(string(raw))
	if len(tokens) == 0 {
		return fmt.Errorf("no token in %s", *tokensFile)
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return fmt.Errorf("cannot read the body: %w", err)
	}
	ca, err := os.ReadFile(*caFile)
	if err != nil {
		return fmt.Errorf("cannot read the CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("no certificate in %s", *caFile)
	}
	h := http.Header{}
	for _, kv := range hdrs {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return fmt.Errorf("header %q is not name: value", kv)
		}
		h.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	urls := make([]string, len(tokens))
	for i, t := range tokens {
		urls[i] = strings.TrimRight(*base, "/") + "/3/device/" + t
	}

	var next, ok atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range *conns {
		tr := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
		hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		for range *streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1) - 1
					if i >= int64(*n) {
						return
					}
					req, err := http.NewRequest(http.MethodPost, urls[i%int64(len(urls))], bytes.NewReader(body))
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					req.Header = h
					res, err := hc.Do(req)
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						continue
					}
					_, _ = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					if res.StatusCode == http.StatusOK {
						ok.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	res := struct {
		Requests int64   `json:"requests"`
		OK       int64   `json:"ok"`
		Seconds  float64 `json:"seconds"`
		Error    string  `json:"error,omitempty"`
	}{int64(*n), ok.Load(), secs, ""}
	if e, _ := firstErr.Load().(error); e != nil {
		res.Error = e.Error()
	}
	return json.NewEncoder(out).Encode(res)
}
