package wire

import (
	"slices"
	"strings"

	"github.com/pushd/pushd/push"
)

// Endpoints, as error messages name them.
const (
	pathPush    = "/1.1/push"
	pathDevices = "/1.1/push/devices"
)

// pushParams are the top-level parameters of POST /1.1/push: those the spec names, plus one
// pushd extension, dry_run.
// Any other name is refused (a typo such as "chanels" would otherwise send to every device);
// names are case-sensitive. docs/decisions.md, "Request parameters", lists them.
var pushParams = []string{
	"data", "where", "channels", "push_time", "expiration_time", "expiration_interval",
	"notification_id", "req_id", "prod", "topic", "apns_team_id", "flow_control",
	"_notificationChannel",
	"dry_run",        // pushd extension: validate and count, send nothing
	"channel_policy", // pushd extension: how hybrid Android installations are reached
	"message_class",  // pushd extension: system or marketing (push/class.go)
}

// devicesParams are the top-level parameters of POST /1.1/push/devices: those the spec names,
// plus two pushd extensions, _notificationChannel (the /1.1/push name of the Android
// notification channel; it wins over channel) and dry_run.
var devicesParams = []string{
	"device_type", "device_ids", "data", "expiration_interval", "expiration_time",
	"notification_id", "req_id", "prod", "topic", "apns_team_id", "device_profile", "channel",
	"vendor",
	"_notificationChannel", // pushd extension
	"dry_run",              // pushd extension
	"channel_policy",       // pushd extension
	"message_class",        // pushd extension
}

// checkNames refuses the first member of f (in key order) that is not one of allowed, null
// or not, naming it and the closest allowed name.
func (f fields) checkNames(allowed []string, path string) *push.Error {
	for _, k := range sortedKeys(f) {
		if slices.Contains(allowed, k) {
			continue
		}
		name := k
		if len(name) > 64 {
			name = name[:64] + "..."
		}
		if near := nearestName(k, allowed); near != "" {
			return push.Errorf(push.CodeValidation, "%q is not a parameter of %s: did you mean %q? (names are case-sensitive)", name, path, near)
		}
		return push.Errorf(push.CodeValidation, "%q is not a parameter of %s", name, path)
	}
	return nil
}

// dropNulls removes the null members: a null parameter is an absent one.
func (f fields) dropNulls() {
	for k, v := range f {
		if isNull(v) {
			delete(f, k)
		}
	}
}

// nearestName returns the allowed name closest to k: equal but for case, or at most two
// edits away (one for short names); "" when none is.
func nearestName(k string, allowed []string) string {
	best, bestD := "", 3
	if len(k) <= 4 {
		bestD = 2
	}
	for _, a := range allowed {
		if strings.EqualFold(a, k) {
			return a
		}
		if d := editDistance(strings.ToLower(k), a, bestD); d < bestD {
			best, bestD = a, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b (insertions, deletions,
// substitutions and transpositions of adjacent bytes), or limit when it is limit or more.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit)
}
