// Package gateway holds what the sender pools and the per-gateway clients (sender/apns,
// sender/fcm, ...) share: the classified gateway reply every client returns and a small set of
// HTTP/2 connections that grows only when the open ones carry their share of streams and, for
// clients built with NewBoundedConns, never hands a connection more than that share.
//
// Concurrency: Reply is a value; Conns is safe for concurrent use.
package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kind says what the pool does next with a delivery after one gateway attempt.
type Kind uint8

const (
	KindSent         Kind = iota + 1 // accepted by the gateway
	KindInvalidToken                 // the token is dead: delete the installation, never retry
	KindFailed                       // permanent error of this request (payload, headers, config): no retry
	KindRetry                        // transient (429, 5xx, timeout, connection): retry with backoff
	KindAuth                         // our access token was refused: the client dropped it; retry once, then treat as KindCredentials
	KindCredentials                  // the app's credentials are rejected: stop the pool
	// KindQuota: the vendor's daily quota of the app is spent. The pool parks the app+vendor
	// until the quota window resets (RetryAfter when the gateway says, else the vendor's
	// day boundary) and sends nothing meanwhile.
	KindQuota
)

func (k Kind) String() string {
	switch k {
	case KindSent:
		return "sent"
	case KindInvalidToken:
		return "invalid_token"
	case KindFailed:
		return "failed"
	case KindRetry:
		return "retry"
	case KindAuth:
		return "auth"
	case KindCredentials:
		return "credentials"
	case KindQuota:
		return "quota"
	}
	return "unknown"
}

// Reply is one gateway attempt, classified by the gateway's reply-to-outcome table.
type Reply struct {
	Kind Kind
	// Reason is short, token-free and ends up in the push record for failures, e.g.
	// "BadTopic" or "SENDER_ID_MISMATCH".
	Reason string
	// RetryAfter is the gateway's Retry-After (0: none) for KindRetry; for KindQuota, how
	// long until the quota window resets when the gateway says (0: the vendor's day boundary).
	RetryAfter time.Duration
	// TokenScoped marks a KindCredentials reply that may also mean "this one token belongs to
	// another sender" (FCM SENDER_ID_MISMATCH): once the pool has delivered successfully its
	// credentials are proven, so the pool fails only this delivery instead of opening the breaker.
	TokenScoped bool
	// Since is, for KindInvalidToken, when the gateway learned the token was dead (APNs 410's
	// timestamp); zero when it does not say. An installation refreshed after it keeps its
	// token: the app registered it again (gateways.md, APNs 410).
	Since time.Time
}

// ParseRetryAfter reads a Retry-After header value: delay-seconds or an HTTP date.
// It returns 0 for an empty or unreadable value.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// TransportReply classifies a request that got no gateway reply: retry, with a reason that
// names the gateway and never holds the request URL (which contains the device token).
// otherReason is the reason when err is neither a cancel, a timeout nor a url.Error.
func TransportReply(err error, gateway, otherReason string) Reply {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return Reply{Kind: KindRetry, Reason: "canceled"}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Reply{Kind: KindRetry, Reason: gateway + " request timed out"}
	}
	if connectionLost(err) {
		return Reply{Kind: KindRetry, Reason: gateway + " connection lost"}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return Reply{Kind: KindRetry, Reason: "cannot reach " + gateway + ": " + ue.Err.Error()}
	}
	return Reply{Kind: KindRetry, Reason: otherReason}
}

// connectionLost reports an error of a connection that was up and went away under a request:
// closed or reset by the gateway, or a GOAWAY that refused the request. They get one stable
// reason: the HTTP/2 transport's texts carry stream ids and addresses, which would make every
// one a distinct failure reason on a push record.
func connectionLost(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	msg := err.Error()
	// golang.org/x/net/http2: errClientConnClosed, errClientConnLost, GoAwayError and the
	// graceful-shutdown error are unexported or carry ids; their texts are stable.
	return strings.Contains(msg, "http2: client connection lost") || strings.Contains(msg, "http2: client conn is closed") ||
		strings.Contains(msg, "GOAWAY")
}
