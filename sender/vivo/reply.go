package vivo

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/pushd/pushd/sender/gateway"
)

// vivo result codes (gateways.md §6.3, §6.1).
const (
	CodeOK            = 0
	CodeDayQuota      = 10070
	CodePayloadQuota  = 10252
	CodeBroadcastQuot = 10254
	CodeInvalidUser   = 10302
	CodeAuthRate      = 10250
	// CodeAuthToken is taken as vivo's "authToken invalid or expired": the code is unconfirmed
	// (gateways.md §9), 10000 is what vivo's common table is reported to use for failed
	// authentication.
	CodeAuthToken = 10000
)

// invalidUser status values.
const (
	userNotFound     = 1
	userUnsubscribed = 2
	userNotTest      = 4
)

// codes is vivo's reply-to-outcome table for codes that apply to the whole request.
var codes = map[int]gateway.Reply{
	10050:             {Kind: gateway.KindFailed, Reason: "vivo 10050 regId and alias both empty"},
	10051:             {Kind: gateway.KindFailed, Reason: "vivo 10051 unsupported message type"},
	10054:             {Kind: gateway.KindFailed, Reason: "vivo 10054 bad notifyType"},
	10055:             {Kind: gateway.KindFailed, Reason: "vivo 10055 title empty"},
	10056:             {Kind: gateway.KindFailed, Reason: "vivo 10056 title too long"},
	10094:             {Kind: gateway.KindCredentials, Reason: "vivo 10094 appId does not match the authToken"},
	10096:             {Kind: gateway.KindFailed, Reason: "vivo 10096 invalid category"},
	10097:             {Kind: gateway.KindFailed, Reason: "vivo 10097 category does not match classification"},
	CodeDayQuota:      {Kind: gateway.KindQuota, Reason: "vivo 10070 daily quota exceeded"},
	CodePayloadQuota:  {Kind: gateway.KindQuota, Reason: "vivo 10252 batch payload quota exceeded"},
	CodeBroadcastQuot: {Kind: gateway.KindQuota, Reason: "vivo 10254 broadcast quota exceeded"},
	10200:             {Kind: gateway.KindCredentials, Reason: "vivo 10200 appId empty"},
	10201:             {Kind: gateway.KindCredentials, Reason: "vivo 10201 appKey empty"},
	10202:             {Kind: gateway.KindCredentials, Reason: "vivo 10202 appKey illegal"},
	10203:             {Kind: gateway.KindCredentials, Reason: "vivo 10203 timestamp empty"},
	10204:             {Kind: gateway.KindCredentials, Reason: "vivo 10204 sign empty"},
	10205:             {Kind: gateway.KindCredentials, Reason: "vivo 10205 appId not found"},
	10206:             {Kind: gateway.KindCredentials, Reason: "vivo 10206 sign error"},
	10207:             {Kind: gateway.KindCredentials, Reason: "vivo 10207 timestamp illegal (check the clock)"},
	CodeAuthRate:      {Kind: gateway.KindRetry, Reason: "vivo 10250 auth call rate exceeded", RetryAfter: time.Second},
	CodeAuthToken:     {Kind: gateway.KindAuth, Reason: "vivo 10000 authToken refused"},
}

var (
	replySent        = gateway.Reply{Kind: gateway.KindSent}
	replyNotFound    = gateway.Reply{Kind: gateway.KindInvalidToken, Reason: "vivo 10302 regId not found"}
	replyUnsubscribe = gateway.Reply{Kind: gateway.KindInvalidToken, Reason: "vivo 10302 regId unsubscribed"}
	replyNotTest     = gateway.Reply{Kind: gateway.KindFailed, Reason: "vivo 10302 not a test device (pushMode 1)"}
)

type invalidUser struct {
	UserID string `json:"userid"`
	Status int    `json:"status"`
}

// sendReply is every vivo answer. pushToList's invalidUsers shape is unconfirmed: it mirrors
// single send's invalidUser (gateways.md §6.5).
type sendReply struct {
	Result       *int          `json:"result"`
	Desc         string        `json:"desc"`
	AuthToken    string        `json:"authToken"`
	TaskID       string        `json:"taskId"`
	InvalidUser  *invalidUser  `json:"invalidUser"`
	InvalidUsers []invalidUser `json:"invalidUsers"`
}

// parse reads a vivo answer: a reply for the whole request, or ok (result 0) and the reply.
// HTTP other than 200 is RETRY for 429 and 5xx, else FIX; 200 without a result is RETRY.
func parse(status int, body []byte, retryAfter string) (sendReply, gateway.Reply, bool) {
	var r sendReply
	if status != http.StatusOK {
		reason := "vivo status " + strconv.Itoa(status)
		if status == http.StatusTooManyRequests || status >= 500 {
			return r, gateway.Reply{Kind: gateway.KindRetry, Reason: reason, RetryAfter: gateway.ParseRetryAfter(retryAfter, time.Now())}, false
		}
		return r, gateway.Reply{Kind: gateway.KindFailed, Reason: reason}, false
	}
	if json.Unmarshal(body, &r) != nil || r.Result == nil {
		return r, gateway.Reply{Kind: gateway.KindRetry, Reason: "vivo reply without a result code"}, false
	}
	if *r.Result == CodeOK {
		return r, replySent, true
	}
	if rep, ok := codes[*r.Result]; ok {
		return r, rep, false
	}
	if *r.Result == CodeInvalidUser {
		if r.InvalidUser == nil {
			return r, gateway.Reply{Kind: gateway.KindFailed, Reason: "vivo 10302 invalid user"}, false
		}
		return r, userReply(r.InvalidUser.Status), false
	}
	reason := "vivo " + strconv.Itoa(*r.Result)
	if r.Desc != "" {
		reason += " " + clip(r.Desc)
	}
	return r, gateway.Reply{Kind: gateway.KindFailed, Reason: reason}, false
}

// userReply is the outcome of an invalidUser status: 1 and 2 drop the regId, 4 (not a test
// device in test mode) fails it without deleting it.
func userReply(status int) gateway.Reply {
	switch status {
	case userNotFound:
		return replyNotFound
	case userUnsubscribed:
		return replyUnsubscribe
	case userNotTest:
		return replyNotTest
	}
	return gateway.Reply{Kind: gateway.KindFailed, Reason: "vivo 10302 invalid user status " + strconv.Itoa(status)}
}

// classifyList fills out[i] for ids[i] from a pushToList answer: the listed invalid users get
// their status's outcome, the others are sent; an error answer applies to all.
func classifyList(status int, body []byte, retryAfter string, ids []string, out []gateway.Reply) {
	r, rep, ok := parse(status, body, retryAfter)
	if !ok && r.InvalidUser != nil && r.Result != nil && *r.Result == CodeInvalidUser {
		// A list answered like a single send [unconfirmed shape]: only the named regId gets
		// the outcome; the others were not sent and are retried.
		for i, id := range ids {
			if id == r.InvalidUser.UserID {
				out[i] = rep
			} else {
				out[i] = gateway.Reply{Kind: gateway.KindRetry, Reason: "vivo 10302 for another regId of the list"}
			}
		}
		return
	}
	if !ok {
		fill(out, rep)
		return
	}
	bad := make(map[string]int, len(r.InvalidUsers))
	for _, u := range r.InvalidUsers {
		bad[u.UserID] = u.Status
	}
	for i, id := range ids {
		if st, found := bad[id]; found {
			out[i] = userReply(st)
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
	if len(s) > 120 {
		return s[:120]
	}
	return s
}
