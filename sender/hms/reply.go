package hms

import (
	"encoding/json"

	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// HMS result codes (gateways.md §3.3); the reply's code is a string.
const (
	CodeSuccess        = "80000000"
	CodePartial        = "80100000"
	CodeAllInvalid     = "80300007"
	CodeAuth           = "80200001"
	CodeTokenExpired   = "80200003"
	CodeTopicBusy      = "80100017"
	CodeInternal       = "81000001"
	CodeNoPermission   = "80300002"
	CodeOAuthFailed    = "80600003"
	CodeTooManyTokens  = "80300010"
	CodeNoHighPriority = "80300011"
)

// codes is the HMS reply-to-outcome table, keyed on the result code. Success and the partial
// success are decided per token by classify. 80300002 (no permission to push) and 80600003
// (client id/secret refused) are app-wide: they stop the pool (FIX credentials). The
// parameter errors are FIX for the request: every token of it fails, none is deleted.
var codes = map[string]gateway.Reply{
	CodeAllInvalid:     {Kind: gateway.KindInvalidToken, Reason: "hms " + CodeAllInvalid + " invalid token"},
	CodeAuth:           {Kind: gateway.KindAuth, Reason: "hms " + CodeAuth + " oauth authentication error"},
	CodeTokenExpired:   {Kind: gateway.KindAuth, Reason: "hms " + CodeTokenExpired + " oauth token expired"},
	CodeTopicBusy:      {Kind: gateway.KindRetry, Reason: "hms " + CodeTopicBusy + " too many concurrent tasks"},
	CodeInternal:       {Kind: gateway.KindRetry, Reason: "hms " + CodeInternal + " internal error"},
	CodeNoPermission:   {Kind: gateway.KindCredentials, Reason: "hms " + CodeNoPermission + " no permission to push"},
	CodeOAuthFailed:    {Kind: gateway.KindCredentials, Reason: "hms " + CodeOAuthFailed + " oauth service request failed"},
	"80100001":         {Kind: gateway.KindFailed, Reason: "hms 80100001 parameter error"},
	"80100002":         {Kind: gateway.KindFailed, Reason: "hms 80100002 sync message needs exactly one token"},
	"80100003":         {Kind: gateway.KindFailed, Reason: "hms 80100003 incorrect message structure"},
	"80100004":         {Kind: gateway.KindFailed, Reason: "hms 80100004 ttl earlier than now"},
	"80100013":         {Kind: gateway.KindFailed, Reason: "hms 80100013 invalid collapse_key"},
	"80100016":         {Kind: gateway.KindFailed, Reason: "hms 80100016 sensitive content"},
	"80100018":         {Kind: gateway.KindFailed, Reason: "hms 80100018 review signature mismatch"},
	"80300008":         {Kind: gateway.KindFailed, Reason: "hms 80300008 message body too large"},
	CodeTooManyTokens:  {Kind: gateway.KindFailed, Reason: "hms " + CodeTooManyTokens + " token count out of range"},
	CodeNoHighPriority: {Kind: gateway.KindFailed, Reason: "hms " + CodeNoHighPriority + " no permission for high-priority messages"},
	"80300013":         {Kind: gateway.KindFailed, Reason: "hms 80300013 receipt address error"},
}

var (
	replySent    = gateway.Reply{Kind: gateway.KindSent}
	replyIllegal = gateway.Reply{Kind: gateway.KindInvalidToken, Reason: "hms " + CodePartial + " illegal token"}
)

type sendReply struct {
	Code      string `json:"code"`
	Msg       string `json:"msg"`
	RequestID string `json:"requestId"`
}

// partialMsg is the msg of 80100000 (its exact shape is unconfirmed, gateways.md §3.3).
type partialMsg struct {
	Success       int      `json:"success"`
	Failure       int      `json:"failure"`
	IllegalTokens []string `json:"illegal_tokens"`
}

// classify maps one HMS reply to the outcome of each token of the request (out[i] for
// tokens[i]). A partial success drops the listed tokens and counts the others sent; a msg
// that cannot be read drops none (no token is deleted without the gateway naming it).
func classify(status int, body []byte, retryAfter string, tokens []string, out []gateway.Reply) {
	var r sendReply
	_ = json.Unmarshal(body, &r) // an unreadable body is judged by its status
	switch r.Code {
	case CodeSuccess:
		fill(out, replySent)
		return
	case CodePartial:
		var pm partialMsg
		_ = json.Unmarshal([]byte(r.Msg), &pm)
		illegal := make(map[string]bool, len(pm.IllegalTokens))
		for _, t := range pm.IllegalTokens {
			illegal[t] = true
		}
		for i, t := range tokens {
			if illegal[t] {
				out[i] = replyIllegal
			} else {
				out[i] = replySent
			}
		}
		return
	}
	if rep, ok := codes[r.Code]; ok {
		if rep.Kind == gateway.KindRetry {
			rep.RetryAfter = parseRetryAfter(retryAfter)
		}
		fill(out, rep)
		return
	}
	rep := vendor.StatusReply("hms", status, r.Code, retryAfter)
	fill(out, rep)
}

func fill(out []gateway.Reply, r gateway.Reply) {
	for i := range out {
		out[i] = r
	}
}
