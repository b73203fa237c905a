package mz

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/pushd/pushd/sender/gateway"
)

// Meizu result codes (gateways.md §5.3); the reply's code is a string.
const (
	CodeOK           = "200"
	CodeSignError    = "1006"
	CodeUnsubscribed = "110002"
	CodeIllegal      = "110003"
	CodeTooFast      = "110010"
)

// codes is the table of top-level codes other than 200: the whole request's outcome. Bad
// appId, appKey or appSecret, a signature refused and a blacklisted app are app-wide: they
// stop the pool (FIX credentials). Parameter errors fail the request's deliveries (FIX), none
// is deleted. The daily limits (110019 daily push count, 110051 app count, 110053 pass-through)
// are QUOTA: the pool parks the app+vendor until China midnight (sender/quota.go). 110010 (app
// request rate too high) is RETRY with backoff.
var codes = map[string]gateway.Reply{
	"500":         {Kind: gateway.KindRetry, Reason: "mz 500 other error"},
	"1001":        {Kind: gateway.KindRetry, Reason: "mz 1001 system error"},
	"1003":        {Kind: gateway.KindRetry, Reason: "mz 1003 server busy"},
	CodeTooFast:   {Kind: gateway.KindRetry, Reason: "mz 110010 app request rate too high"},
	"1005":        {Kind: gateway.KindFailed, Reason: "mz 1005 parameter error"},
	"110004":      {Kind: gateway.KindFailed, Reason: "mz 110004 empty parameter"},
	"110031":      {Kind: gateway.KindFailed, Reason: "mz 110031 bad packageName"},
	"110032":      {Kind: gateway.KindFailed, Reason: "mz 110032 bad taskId"},
	CodeSignError: {Kind: gateway.KindCredentials, Reason: "mz 1006 signature check failed"},
	"110000":      {Kind: gateway.KindCredentials, Reason: "mz 110000 bad appId"},
	"110001":      {Kind: gateway.KindCredentials, Reason: "mz 110001 bad appKey"},
	"110033":      {Kind: gateway.KindCredentials, Reason: "mz 110033 bad appSecret"},
	"110009":      {Kind: gateway.KindCredentials, Reason: "mz 110009 app blacklisted"},
	"110019":      {Kind: gateway.KindQuota, Reason: "mz 110019 daily push limit exceeded (quota)"},
	"110051":      {Kind: gateway.KindQuota, Reason: "mz 110051 app count limit exceeded (quota)"},
	"110053":      {Kind: gateway.KindQuota, Reason: "mz 110053 pass-through over limit (quota)"},
}

// targetCodes is the table of per-pushId codes of a 200's value map. A pushId not listed was
// accepted. 110002 and 110003 are dead pushIds (DROP: the installation is deleted under the
// ratio guard); 110010 (the user switched messages off) and 520 (folded: five messages of the
// app within a minute) must not be retried and keep the installation; 110011 is the daily
// public-message cap of that one pushId's user: it fails that pushId with the reason and
// does not park the app (every other user of the app can still be reached today; a retry
// today would be refused again); 501, 513 and 519 are RETRY.
var targetCodes = map[string]gateway.Reply{
	CodeUnsubscribed: {Kind: gateway.KindInvalidToken, Reason: "mz 110002 pushId not subscribed"},
	CodeIllegal:      {Kind: gateway.KindInvalidToken, Reason: "mz 110003 pushId illegal"},
	"110005":         {Kind: gateway.KindFailed, Reason: "mz 110005 alias not subscribed"},
	CodeTooFast:      {Kind: gateway.KindFailed, Reason: "mz 110010 user switched messages off"},
	"110011":         {Kind: gateway.KindFailed, Reason: "mz 110011 daily public-message cap exceeded (quota)"},
	"201":            {Kind: gateway.KindFailed, Reason: "mz 201 no permission"},
	"501":            {Kind: gateway.KindRetry, Reason: "mz 501 push failed"},
	"513":            {Kind: gateway.KindRetry, Reason: "mz 513 database error"},
	"519":            {Kind: gateway.KindRetry, Reason: "mz 519 overload"},
	"520":            {Kind: gateway.KindFailed, Reason: "mz 520 folded: too many messages to the device within a minute"},
}

var replySent = gateway.Reply{Kind: gateway.KindSent}

type sendReply struct {
	Code    json.RawMessage            `json:"code"` // a string; a number is read too
	Message string                     `json:"message"`
	Value   map[string]json.RawMessage `json:"value"`
}

// classify maps one Meizu reply to the outcome of each pushId of the request (out[i] for
// pushIDs[i]). HTTP other than 200, and a 200 without a code, are RETRY: no answer we know,
// retrying is safe and deleting is not. A per-pushId code this table does not know fails that
// pushId (FIX), never deletes it.
func classify(status int, body []byte, retryAfter string, pushIDs []string, out []gateway.Reply) {
	if status != http.StatusOK {
		fill(out, gateway.Reply{Kind: gateway.KindRetry, Reason: "mz status " + strconv.Itoa(status), RetryAfter: parseRetryAfter(retryAfter)})
		return
	}
	var r sendReply
	code := ""
	if json.Unmarshal(body, &r) == nil && len(r.Code) > 0 {
		if json.Unmarshal(r.Code, &code) != nil {
			var n json.Number
			if json.Unmarshal(r.Code, &n) == nil {
				code = n.String()
			}
		}
	}
	switch {
	case code == "":
		fill(out, gateway.Reply{Kind: gateway.KindRetry, Reason: "mz reply without a result code"})
		return
	case code != CodeOK:
		rep, ok := codes[code]
		if !ok {
			rep = gateway.Reply{Kind: gateway.KindFailed, Reason: "mz " + clip(code)}
			if r.Message != "" {
				rep.Reason += " " + clip(r.Message)
			}
		}
		if rep.Kind == gateway.KindRetry {
			rep.RetryAfter = parseRetryAfter(retryAfter)
		}
		fill(out, rep)
		return
	}
	failed := make(map[string]gateway.Reply)
	for c, raw := range r.Value {
		var ids []string
		if json.Unmarshal(raw, &ids) != nil {
			continue // not a list of pushIds: names none
		}
		rep, ok := targetCodes[c]
		if !ok {
			rep = gateway.Reply{Kind: gateway.KindFailed, Reason: "mz " + clip(c)}
		}
		for _, id := range ids {
			failed[id] = rep
		}
	}
	for i, id := range pushIDs {
		if rep, ok := failed[id]; ok {
			out[i] = rep
		} else {
			out[i] = replySent
		}
	}
}

func fill(out []gateway.Reply, r gateway.Reply) {
	for i := range out {
		out[i] = r
	}
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}
