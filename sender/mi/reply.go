package mi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/pushd/pushd/sender/gateway"
)

// CodeInvalidSecret is Xiaomi's "Invalid application secret." (gateways.md §4.3).
const CodeInvalidSecret = 21301

type sendReply struct {
	Result string `json:"result"`
	Code   *int   `json:"code"`
	Reason string `json:"reason"`
}

// classify maps one Xiaomi reply to what the pool does with every regId of the request. Only
// code 0 and 21301 are confirmed: 0 is sent (Xiaomi gives no per-regId outcome), 21301 stops
// the pool (FIX credentials), any other code fails the request's deliveries (FIX; Xiaomi's
// quota and rate codes are unconfirmed, so none is retried or parked); HTTP other than 200
// and a 200 without a code are RETRY (the public SDKs retry them).
func classify(status int, body []byte, retryAfter string) gateway.Reply {
	if status != http.StatusOK {
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "mi status " + strconv.Itoa(status), RetryAfter: parseRetryAfter(retryAfter)}
	}
	var r sendReply
	if json.Unmarshal(body, &r) != nil || r.Code == nil {
		return gateway.Reply{Kind: gateway.KindRetry, Reason: "mi reply without a result code"}
	}
	switch *r.Code {
	case 0:
		return gateway.Reply{Kind: gateway.KindSent}
	case CodeInvalidSecret:
		return gateway.Reply{Kind: gateway.KindCredentials, Reason: "mi 21301 invalid application secret"}
	}
	reason := "mi " + strconv.Itoa(*r.Code)
	if r.Reason != "" {
		reason += " " + clip(r.Reason)
	}
	return gateway.Reply{Kind: gateway.KindFailed, Reason: reason}
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
