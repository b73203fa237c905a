package oppo

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pushd/pushd/sender/gateway"
)

// OPPO return codes (gateways.md §7.3).
const (
	CodeOK        = 0
	CodeBadToken  = 11
	CodeDayLimit  = 33
	codeBizFirst  = 10000
	codeBizLast   = 20000
	flowRetryWait = time.Second
)

func fix(code int, what string) gateway.Reply {
	return gateway.Reply{Kind: gateway.KindFailed, Reason: "oppo " + strconv.Itoa(code) + " " + what}
}

func stop(code int, what string) gateway.Reply {
	return gateway.Reply{Kind: gateway.KindCredentials, Reason: "oppo " + strconv.Itoa(code) + " " + what}
}

// codes is OPPO's reply-to-outcome table. Codes about the app itself (app_key, sign,
// timestamp, IP blacklist, access, app disabled, no push permission) stop the pool: every
// request of the app would get them. Flow control and call limits retry after a second.
var codes = map[int]gateway.Reply{
	-1:           {Kind: gateway.KindRetry, Reason: "oppo -1 service unavailable"},
	-2:           {Kind: gateway.KindRetry, Reason: "oppo -2 server flow control", RetryAfter: flowRetryWait},
	CodeBadToken: {Kind: gateway.KindAuth, Reason: "oppo 11 invalid auth_token"},
	12:           fix(12, "http method not allowed"),
	13:           {Kind: gateway.KindRetry, Reason: "oppo 13 app call limit", RetryAfter: flowRetryWait},
	14:           stop(14, "invalid app_key"),
	15:           stop(15, "app_key missing"),
	16:           stop(16, "sign invalid"),
	17:           stop(17, "sign missing"),
	18:           stop(18, "timestamp missing"),
	19:           stop(19, "timestamp invalid (check the clock)"),
	20:           fix(20, "method not exist"),
	21:           fix(21, "method not allowed"),
	22:           fix(22, "version missing"),
	23:           fix(23, "version invalid"),
	24:           fix(24, "invalid encoding"),
	25:           fix(25, "invalid request"),
	26:           stop(26, "ip blacklisted"),
	27:           stop(27, "access denied"),
	28:           stop(28, "app disabled"),
	29:           fix(29, "auth_token missing"),
	30:           stop(30, "no api push permission"),
	31:           fix(31, "data not found"),
	32:           fix(32, "duplicate data"),
	CodeDayLimit: {Kind: gateway.KindQuota, Reason: "oppo 33 daily message limit exceeded"},
	34:           fix(34, "picture quota exceeded"),
	40:           fix(40, "argument missing"),
	41:           fix(41, "invalid argument"),
	51:           fix(51, "invalid picture"),
	55:           {Kind: gateway.KindRetry, Reason: "oppo 55 call frequency limit", RetryAfter: flowRetryWait},
	59:           fix(59, "no backup-link permission"),
	67:           fix(67, "category or notify_level error"),
}

var replySent = gateway.Reply{Kind: gateway.KindSent}

type sendReply struct {
	Code    *int            `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

type authData struct {
	AuthToken string `json:"auth_token"`
}

type item struct {
	MessageID      string `json:"messageId"`
	RegistrationID string `json:"registrationId"`
	ErrorCode      int    `json:"errorCode"`
	ErrorMessage   string `json:"errorMessage"`
}

// parse reads an OPPO answer: ok with the reply when code is 0, else the outcome for the
// whole request. HTTP 429/5xx RETRY (Retry-After honoured), other non-200 FIX; 200 without a
// code RETRY.
func parse(status int, body []byte, retryAfter string) (sendReply, gateway.Reply, bool) {
	var r sendReply
	if status != http.StatusOK {
		reason := "oppo status " + strconv.Itoa(status)
		if status == http.StatusTooManyRequests || status >= 500 {
			return r, gateway.Reply{Kind: gateway.KindRetry, Reason: reason, RetryAfter: gateway.ParseRetryAfter(retryAfter, time.Now())}, false
		}
		return r, gateway.Reply{Kind: gateway.KindFailed, Reason: reason}, false
	}
	if json.Unmarshal(body, &r) != nil || r.Code == nil {
		return r, gateway.Reply{Kind: gateway.KindRetry, Reason: "oppo reply without a code"}, false
	}
	if *r.Code == CodeOK {
		return r, replySent, true
	}
	return r, codeReply(*r.Code, r.Message, nil), false
}

// codeReply is the outcome of a non-zero code; drop lists the codes of a dead regId.
func codeReply(code int, msg string, drop []int) gateway.Reply {
	if rep, ok := codes[code]; ok {
		return rep
	}
	reason := "oppo " + strconv.Itoa(code)
	if msg != "" {
		reason += " " + clip(msg)
	}
	if slices.Contains(drop, code) {
		return gateway.Reply{Kind: gateway.KindInvalidToken, Reason: reason}
	}
	return gateway.Reply{Kind: gateway.KindFailed, Reason: reason}
}

// classify fills out[i] for ids[i] from a unicast (one id) or unicast_batch answer. A
// business code (10000–20000) in drop deletes the regId: for a unicast the code of the
// request, for a batch each item's errorCode. A batch item the reply does not list is
// retried (it may not have been sent).
func classify(status int, body []byte, retryAfter string, ids []string, drop []int, batch bool, out []gateway.Reply) {
	r, rep, ok := parse(status, body, retryAfter)
	if !ok {
		if !batch && r.Code != nil && *r.Code >= codeBizFirst && *r.Code <= codeBizLast {
			rep = codeReply(*r.Code, r.Message, drop)
		}
		fill(out, rep)
		return
	}
	if !batch {
		fill(out, replySent)
		return
	}
	var items []item
	_ = json.Unmarshal(r.Data, &items) // unreadable: every id is retried below
	byID := make(map[string]item, len(items))
	for _, it := range items {
		byID[it.RegistrationID] = it
	}
	for i, id := range ids {
		it, found := byID[id]
		switch {
		case !found:
			out[i] = gateway.Reply{Kind: gateway.KindRetry, Reason: "oppo batch reply without this regId"}
		case it.ErrorCode == 0:
			out[i] = replySent
		default:
			out[i] = codeReply(it.ErrorCode, it.ErrorMessage, drop)
		}
	}
}

func fill(out []gateway.Reply, r gateway.Reply) {
	for i := range out {
		out[i] = r
	}
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
