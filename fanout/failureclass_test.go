package fanout

import (
	"testing"

	"github.com/pushd/pushd/push"
)

func TestFailureClass(t *testing.T) {
	for reason, want := range map[string]string{
		ReasonDailyVolume: push.FailDailyVolume,
		"credentials rejected: InvalidProviderToken":                                                 push.FailCredentials,
		"gateway unavailable for the retry horizon (10m0s): 503 ServiceUnavailable":                  push.FailUnavailable,
		"vivo 10070 daily quota exceeded: the push expired while the vendor's daily quota was spent": push.FailQuota,
		"no hms credentials configured":                                                              push.FailConfig,
		`hybrid push configuration "beta" of vendor hms is not configured for this app`:              push.FailConfig,
		"vendor fcm is not available in the china edition":                                           push.FailConfig,
		"cannot render the vivo payload: the rendered payload is too large":                          push.FailPayload,
		"canceled":                          push.FailCancelled,
		"hms 80100013 invalid collapse_key": push.FailRejected,
		"":                                  push.FailRejected,
	} {
		if got := FailureClass(reason); got != want {
			t.Errorf("FailureClass(%q) = %q, want %q", reason, got, want)
		}
	}
}
