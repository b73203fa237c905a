package apns

import (
	"net/http"
	"strconv"

	"github.com/sideshow/apns2"

	"github.com/pushd/pushd/sender/gateway"
)

// Reasons APNs sends that sideshow/apns2 v0.25 has no constant for.
const (
	ReasonBadEnvironmentKeyInToken = "BadEnvironmentKeyInToken"
	ReasonUnrelatedKeyIDInToken    = "UnrelatedKeyIdInToken"
)

// replies is the APNs reply-to-outcome table (gateways.md §1.5), keyed on the reason.
// DeviceTokenNotForTopic is a failure, not an invalid token: a wrong topic in one request
// would otherwise delete every installation it reached.
var replies = map[string]gateway.Kind{
	apns2.ReasonUnregistered:   gateway.KindInvalidToken,
	apns2.ReasonExpiredToken:   gateway.KindInvalidToken,
	apns2.ReasonBadDeviceToken: gateway.KindInvalidToken,

	apns2.ReasonDeviceTokenNotForTopic: gateway.KindFailed,
	apns2.ReasonMissingDeviceToken:     gateway.KindFailed,
	apns2.ReasonBadTopic:               gateway.KindFailed,
	apns2.ReasonMissingTopic:           gateway.KindFailed,
	apns2.ReasonTopicDisallowed:        gateway.KindFailed,
	apns2.ReasonBadMessageID:           gateway.KindFailed,
	apns2.ReasonBadExpirationDate:      gateway.KindFailed,
	apns2.ReasonBadPriority:            gateway.KindFailed,
	apns2.ReasonBadCollapseID:          gateway.KindFailed,
	apns2.ReasonInvalidPushType:        gateway.KindFailed,
	apns2.ReasonDuplicateHeaders:       gateway.KindFailed,
	apns2.ReasonPayloadEmpty:           gateway.KindFailed,
	apns2.ReasonPayloadTooLarge:        gateway.KindFailed,
	apns2.ReasonBadPath:                gateway.KindFailed,
	apns2.ReasonMethodNotAllowed:       gateway.KindFailed,
	apns2.ReasonForbidden:              gateway.KindFailed,

	apns2.ReasonExpiredProviderToken: gateway.KindAuth,

	apns2.ReasonInvalidProviderToken:      gateway.KindCredentials,
	apns2.ReasonMissingProviderToken:      gateway.KindCredentials,
	apns2.ReasonBadCertificate:            gateway.KindCredentials,
	apns2.ReasonBadCertificateEnvironment: gateway.KindCredentials,
	ReasonBadEnvironmentKeyInToken:        gateway.KindCredentials,

	apns2.ReasonIdleTimeout:                 gateway.KindRetry,
	ReasonUnrelatedKeyIDInToken:             gateway.KindRetry,
	apns2.ReasonTooManyRequests:             gateway.KindRetry,
	apns2.ReasonTooManyProviderTokenUpdates: gateway.KindRetry,
	apns2.ReasonInternalServerError:         gateway.KindRetry,
	apns2.ReasonServiceUnavailable:          gateway.KindRetry,
	apns2.ReasonShutdown:                    gateway.KindRetry,
}

// classify maps one APNs reply to what the pool does next. Unknown reasons: 429 and 5xx are
// retried, other statuses fail (Apple keeps adding reasons).
func classify(status int, reason string) gateway.Reply {
	if status == http.StatusOK {
		return gateway.Reply{Kind: gateway.KindSent}
	}
	if k, ok := replies[reason]; ok {
		return gateway.Reply{Kind: k, Reason: reason}
	}
	if reason == "" {
		reason = "status " + strconv.Itoa(status)
	} else if len(reason) > 64 {
		reason = reason[:64]
	}
	if status == http.StatusTooManyRequests || status >= 500 {
		return gateway.Reply{Kind: gateway.KindRetry, Reason: reason}
	}
	return gateway.Reply{Kind: gateway.KindFailed, Reason: reason}
}
