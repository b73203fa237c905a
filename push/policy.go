package push

// Channel policies: how an Android installation that has a vendor (a hybrid installation) is
// reached. The spec knows only PolicyVendor; the others are pushd extensions (the app setting
// channelPolicy and the push parameter channel_policy, docs/decisions.md "Channel policy").
const (
	PolicyVendor      = "vendor"       // the vendor channel only (the default)
	PolicyOwnFirst    = "own_first"    // the own channel when connected now, else the vendor
	PolicyVendorFirst = "vendor_first" // the vendor; a target it refuses falls back to the own channel
	PolicyOwnOnly     = "own_only"     // the own channel only (cached while offline)
)

// ValidChannelPolicy says whether p is a channel policy ("" is not: callers default it).
func ValidChannelPolicy(p string) bool {
	switch p {
	case PolicyVendor, PolicyOwnFirst, PolicyVendorFirst, PolicyOwnOnly:
		return true
	}
	return false
}

// AdmitsHybrid says whether installations with a vendor may connect to the own channel under
// the app's policy p.
func AdmitsHybrid(p string) bool { return p != "" && p != PolicyVendor }
