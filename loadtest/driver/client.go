package driver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// auth says how a request authenticates to pushd.
type auth uint8

const (
	authNone auth = iota
	authAdmin
	authApp
	authMaster
)

// keys are the credentials of the run's app and of the admin API.
type keys struct {
	adminToken string
	appID      string
	appKey     string
	masterKey  string
}

// client calls pushd's REST API. Safe for concurrent use.
type client struct {
	http     *http.Client
	base     string
	deadline time.Duration
	keys     keys
	retries  atomic.Int64
}

// retry policy for 429, 503 and transport errors: every call retried is safe to repeat
// (installation POSTs are upserts by device id; push calls carry a req_id).
const (
	maxAttempts   = 8
	baseBackoff   = 50 * time.Millisecond
	maxBackoff    = 2 * time.Second
	maxRetryAfter = 5 * time.Second
)

func newClient(base string, conns int, deadline time.Duration) *client {
	tr := &http.Transport{
		MaxIdleConns:        conns + 16,
		MaxIdleConnsPerHost: conns + 16,
		IdleConnTimeout:     90 * time.Second,
	}
	return &client{http: &http.Client{Transport: tr}, base: base, deadline: deadline}
}

// apiError is a non-2xx answer of pushd.
type apiError struct {
	Method, Path string
	Status       int
	Code         int    `json:"code"`
	Message      string `json:"error"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d, code %d: %s", e.Method, e.Path, e.Status, e.Code, e.Message)
}

// do sends one request and decodes a 2xx JSON answer into out (if non-nil). It returns the
// status of the final answer.
func (c *client) do(ctx context.Context, method, path string, a auth, body, out any) (int, error) {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return 0, fmt.Errorf("cannot encode the body of %s %s: %w", method, path, err)
		}
	}
	for attempt := 1; ; attempt++ {
		status, retryAfter, err := c.once(ctx, method, path, a, raw, out)
		retryable := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable ||
			(status == 0 && err != nil && ctx.Err() == nil)
		if err == nil || !retryable || attempt == maxAttempts {
			return status, err
		}
		c.retries.Add(1)
		wait := min(baseBackoff<<(attempt-1), maxBackoff)
		if retryAfter > 0 {
			wait = min(retryAfter, maxRetryAfter)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return status, fmt.Errorf("cannot %s %s: %w (last answer: %v)", method, path, ctx.Err(), err)
		}
	}
}

func (c *client) once(ctx context.Context, method, path string, a auth, raw []byte, out any) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, c.deadline)
	defer cancel()
	var rd io.Reader
	if raw != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, 0, fmt.Errorf("cannot build %s %s: %w", method, path, err)
	}
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch a {
	case authAdmin:
		req.Header.Set("Authorization", "Bearer "+c.keys.adminToken)
	case authApp:
		req.Header.Set("X-SVC-Id", c.keys.appID)
		req.Header.Set("X-SVC-Key", c.keys.appKey)
	case authMaster:
		req.Header.Set("X-SVC-Id", c.keys.appID)
		req.Header.Set("X-SVC-Key", c.keys.masterKey+",master")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("cannot %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &apiError{Method: method, Path: path, Status: resp.StatusCode}
		if json.Unmarshal(b, e) != nil || e.Message == "" {
			e.Message = string(b[:min(len(b), 200)])
		}
		ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return resp.StatusCode, time.Duration(ra) * time.Second, e
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, 0, fmt.Errorf("cannot decode the answer to %s %s: %w", method, path, err)
		}
	}
	return resp.StatusCode, 0, nil
}

// statusOf returns the HTTP status of an apiError, or 0.
func statusOf(err error) int {
	var e *apiError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// newSimClient returns a client for the simulators' control endpoints, trusting caPEM.
func newSimClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("cannot use the simulators' CA bundle: no PEM certificate in it")
	}
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true, // the APNs simulator speaks HTTP/2 only
	}
	return &http.Client{Transport: tr, Timeout: time.Minute}, nil
}
