package fcm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/pushd/pushd/sender/gateway"
)

// FCM error codes (google.firebase.fcm.v1.FcmError errorCode).
const (
	ErrUnspecified         = "UNSPECIFIED_ERROR"
	ErrInvalidArgument     = "INVALID_ARGUMENT"
	ErrUnregistered        = "UNREGISTERED"
	ErrSenderIDMismatch    = "SENDER_ID_MISMATCH"
	ErrQuotaExceeded       = "QUOTA_EXCEEDED"
	ErrUnavailable         = "UNAVAILABLE"
	ErrInternal            = "INTERNAL"
	ErrThirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"
)

// replies is the FCM reply-to-outcome table (gateways.md §2.3), keyed on the FCM error code.
// INVALID_ARGUMENT is decided by classify: an invalid token, or a bad message.
// SENDER_ID_MISMATCH opens the breaker only while the pool has never delivered (the project
// itself is wrong); afterwards it fails just that delivery (the token is another sender's) and
// never deletes: an app uploading the wrong project would otherwise lose every installation.
var replies = map[string]gateway.Reply{
	ErrUnregistered:        {Kind: gateway.KindInvalidToken, Reason: ErrUnregistered},
	ErrSenderIDMismatch:    {Kind: gateway.KindCredentials, Reason: ErrSenderIDMismatch, TokenScoped: true},
	ErrThirdPartyAuthError: {Kind: gateway.KindCredentials, Reason: ErrThirdPartyAuthError},
	ErrQuotaExceeded:       {Kind: gateway.KindRetry, Reason: ErrQuotaExceeded},
	ErrUnavailable:         {Kind: gateway.KindRetry, Reason: ErrUnavailable},
	ErrInternal:            {Kind: gateway.KindRetry, Reason: ErrInternal},
	ErrUnspecified:         {Kind: gateway.KindRetry, Reason: ErrUnspecified},
}

// googleError is Google's JSON error body.
type googleError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type            string `json:"@type"`
			ErrorCode       string `json:"errorCode"`
			FieldViolations []struct {
				Field       string `json:"field"`
				Description string `json:"description"`
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

// classify maps a non-200 FCM reply to what the pool does next.
func classify(status int, data []byte) gateway.Reply {
	var ge googleError
	_ = json.Unmarshal(data, &ge) // unreadable bodies are judged by status
	var code string
	tokenViolation := false
	for _, d := range ge.Error.Details {
		if d.ErrorCode != "" && code == "" {
			code = d.ErrorCode
		}
		for _, v := range d.FieldViolations {
			if v.Field == "message.token" {
				tokenViolation = true
			}
		}
	}
	if r, ok := replies[code]; ok {
		return r
	}
	canonical := ge.Error.Status
	if code == ErrInvalidArgument || (code == "" && (canonical == ErrInvalidArgument || status == http.StatusBadRequest)) {
		if tokenViolation || strings.Contains(ge.Error.Message, "registration token") {
			return gateway.Reply{Kind: gateway.KindInvalidToken, Reason: ErrInvalidArgument}
		}
		return gateway.Reply{Kind: gateway.KindFailed, Reason: invalidReason(&ge)}
	}
	reason := code
	if reason == "" {
		reason = canonical
	}
	if reason == "" {
		reason = "status " + strconv.Itoa(status)
	}
	reason = clip(reason)
	switch {
	case status == http.StatusUnauthorized:
		return gateway.Reply{Kind: gateway.KindAuth, Reason: reason}
	case status == http.StatusForbidden, status == http.StatusNotFound:
		return gateway.Reply{Kind: gateway.KindCredentials, Reason: reason}
	case status == http.StatusTooManyRequests, status >= 500:
		return gateway.Reply{Kind: gateway.KindRetry, Reason: reason}
	}
	return gateway.Reply{Kind: gateway.KindFailed, Reason: reason}
}

// invalidReason names a bad message by its first field violation, or Google's message.
func invalidReason(ge *googleError) string {
	for _, d := range ge.Error.Details {
		for _, v := range d.FieldViolations {
			if v.Field != "" {
				return ErrInvalidArgument + ": " + clip(v.Field+": "+v.Description)
			}
		}
	}
	if ge.Error.Message != "" {
		return ErrInvalidArgument + ": " + clip(ge.Error.Message)
	}
	return ErrInvalidArgument
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160]
	}
	return s
}
