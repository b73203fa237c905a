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
	Result string          `json:"result"`
	Code   *int            `json:"code"`
	Reason string          `json:"reason"`
	Data   json.RawMessage `json:"data"`
}

// quotaData is the part of a reply's data that speaks of the app's daily quota (gateways.md
// §4.3: data may carry day_quota, day_acked, channel_exceed_quota). Xiaomi sends the numbers as
// strings or numbers; only their presence matters here.
type quotaData struct {
	DayQuota           json.RawMessage `json:"day_quota"`
	ChannelExceedQuota json.RawMessage `json:"channel_exceed_quota"`
}

// quotaSpent reports whether an error reply's data names the daily quota.
func quotaSpent(data json.RawMessage) bool {
	var d quotaData
	if json.Unmarshal(data, &d) != nil {
		return false
	}
	return present(d.DayQuota) || present(d.ChannelExceedQuota)
}

func present(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// classify maps one Xiaomi reply to what the pool does with every regId of the request. Only
// code 0 and 21301 are confirmed: 0 is sent (Xiaomi gives no per-regId outcome), 21301 stops
// the pool (FIX credentials). Xiaomi's quota code is unconfirmed, but its quota fields are
// documented: an error whose data carries day_quota or channel_exceed_quota is QUOTA (the pool
// parks the app until China midnight). Any other code fails the request's deliveries (FIX).
// HTTP other than 200 and a 200 without a code are RETRY (the public SDKs retry them), with
// the Retry-After of a 429/503 honoured: Xiaomi's rate limit answer is unconfirmed, and
// HTTP flow control is the form the other vendors use.
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
	if quotaSpent(r.Data) {
		return gateway.Reply{Kind: gateway.KindQuota, Reason: reason + " (daily quota)"}
	}
	return gateway.Reply{Kind: gateway.KindFailed, Reason: reason}
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
