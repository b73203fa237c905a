package honor

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// Honor result codes. Confirmed by public client code (docs/vendors.md): 200 (and 80000000)
// success with data.failTokens / data.expireTokens. The others are HMS's table, which Honor's
// API copies; they are unconfirmed for Honor. The code may come as a number or a string.
const (
	CodeOK           = "200"
	CodeSuccess      = "80000000"
	CodePartial      = "80100000"
	CodeAllInvalid   = "80300007"
	CodeAuth         = "80200001"
	CodeTokenExpired = "80200003"
	CodeInternal     = "81000001"
	CodeNoPermission = "80300002"
	CodeTooLarge     = "80300008"
	CodeTokenCount   = "80300010"
	CodeParam        = "80100001"
	CodeStructure    = "80100003"
	CodeBadTTL       = "80100004"
)

// codes is the Honor reply-to-outcome table for the codes that decide a whole request. Success
// and partial success are decided per token by classify. 80300002 (no permission to push) and
// 80600003 (client refused) are app-wide: they stop the pool. Parameter errors are FIX for the
// request: every token of it fails, none is deleted.
var codes = map[string]gateway.Reply{
	CodeAllInvalid:   {Kind: gateway.KindInvalidToken, Reason: "honor " + CodeAllInvalid + " invalid token"},
	CodeAuth:         {Kind: gateway.KindAuth, Reason: "honor " + CodeAuth + " oauth authentication error"},
	CodeTokenExpired: {Kind: gateway.KindAuth, Reason: "honor " + CodeTokenExpired + " oauth token expired"},
	CodeInternal:     {Kind: gateway.KindRetry, Reason: "honor " + CodeInternal + " internal error"},
	"80100017":       {Kind: gateway.KindRetry, Reason: "honor 80100017 too many concurrent tasks"},
	CodeNoPermission: {Kind: gateway.KindCredentials, Reason: "honor " + CodeNoPermission + " no permission to push"},
	"80600003":       {Kind: gateway.KindCredentials, Reason: "honor 80600003 oauth client refused"},
	CodeParam:        {Kind: gateway.KindFailed, Reason: "honor " + CodeParam + " parameter error"},
	CodeStructure:    {Kind: gateway.KindFailed, Reason: "honor " + CodeStructure + " incorrect message structure"},
	CodeBadTTL:       {Kind: gateway.KindFailed, Reason: "honor " + CodeBadTTL + " ttl out of range"},
	"80100016":       {Kind: gateway.KindFailed, Reason: "honor 80100016 sensitive content"},
	CodeTooLarge:     {Kind: gateway.KindFailed, Reason: "honor " + CodeTooLarge + " message body too large"},
	CodeTokenCount:   {Kind: gateway.KindFailed, Reason: "honor " + CodeTokenCount + " token count out of range"},
}

var (
	replySent    = gateway.Reply{Kind: gateway.KindSent}
	replyExpired = gateway.Reply{Kind: gateway.KindInvalidToken, Reason: "honor expired token"}
	replyFailed  = gateway.Reply{Kind: gateway.KindRetry, Reason: "honor token not delivered (failTokens)"}
)

type sendReply struct {
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
	Data    *struct {
		RequestID    string   `json:"requestId"`
		FailTokens   []string `json:"failTokens"`
		ExpireTokens []string `json:"expireTokens"`
	} `json:"data"`
}

// code is the reply's result code as text: a JSON number or string, "" when absent or neither.
func (r *sendReply) code() string {
	c := bytes.TrimSpace(r.Code)
	if len(c) == 0 {
		return ""
	}
	if c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) != nil {
			return ""
		}
		return s
	}
	var n json.Number
	if json.Unmarshal(c, &n) != nil {
		return ""
	}
	return n.String()
}

// classify maps one Honor reply to the outcome of each token of the request (out[i] for
// tokens[i]). A success (or partial success) sends every token except those the reply lists:
// expireTokens are dead (DROP), failTokens were not delivered this time (RETRY). quota lists
// the codes taken as a spent daily quota (Config.QuotaCodes).
func classify(status int, body []byte, retryAfter string, tokens []string, out []gateway.Reply, quota []string) {
	var r sendReply
	_ = json.Unmarshal(body, &r) // an unreadable body is judged by its status
	code := r.code()
	switch code {
	case CodeOK, CodeSuccess, CodePartial:
		if status >= 300 {
			break // a success code under an error status is no success: judged by the status
		}
		var fail, expire map[string]bool
		if r.Data != nil {
			fail, expire = set(r.Data.FailTokens), set(r.Data.ExpireTokens)
		}
		for i, t := range tokens {
			switch {
			case expire[t]:
				out[i] = replyExpired
			case fail[t]:
				out[i] = replyFailed
			default:
				out[i] = replySent
			}
		}
		return
	}
	for _, q := range quota {
		if code == q {
			fill(out, gateway.Reply{Kind: gateway.KindQuota, Reason: "honor " + code + " daily quota exceeded", RetryAfter: parseRetryAfter(retryAfter)})
			return
		}
	}
	if rep, ok := codes[code]; ok {
		if rep.Kind == gateway.KindRetry {
			rep.RetryAfter = parseRetryAfter(retryAfter)
		}
		fill(out, rep)
		return
	}
	fill(out, vendor.StatusReply("honor", status, code, retryAfter))
}

func set(ts []string) map[string]bool {
	if len(ts) == 0 {
		return nil
	}
	m := make(map[string]bool, len(ts))
	for _, t := range ts {
		m[t] = true
	}
	return m
}

func fill(out []gateway.Reply, r gateway.Reply) {
	for i := range out {
		out[i] = r
	}
}

func parseRetryAfter(v string) time.Duration { return gateway.ParseRetryAfter(v, time.Now()) }
