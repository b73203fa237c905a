package api

import (
	"math"

	"github.com/pushd/pushd/push"
)

// maxVendorDaily bounds a configured daily quota: far above any vendor's per-app quota (vivo
// and OPPO grant a few times the app's subscribers), so extra digits are refused, not read
// as "unlimited in practice".
const maxVendorDaily = 10_000_000_000

// checkVendorQuotas refuses a negative or oversized quota, a per-second limit that is negative,
// not finite or above maxSenderRate, and an unknown time zone.
func checkVendorQuotas(q *push.VendorQuotas) *push.Error {
	var perr *push.Error
	q.Each(func(ch string, v push.VendorQuota) {
		switch {
		case perr != nil:
		case v.Daily < 0 || v.Daily > maxVendorDaily:
			perr = push.Errorf(push.CodeValidation, "vendorQuotas.%s.daily must be 0 (none) to %d messages", ch, int64(maxVendorDaily))
		case v.MarketingDaily < 0 || v.MarketingDaily > maxVendorDaily:
			perr = push.Errorf(push.CodeValidation, "vendorQuotas.%s.marketingDaily must be 0 (counted in daily) to %d messages", ch, int64(maxVendorDaily))
		case math.IsNaN(v.PerSecond) || v.PerSecond < 0 || v.PerSecond > maxSenderRate:
			perr = push.Errorf(push.CodeValidation, "vendorQuotas.%s.perSecond must be 0 (none) to %d deliveries per second", ch, maxSenderRate)
		default:
			if _, err := v.Location(); err != nil {
				perr = push.Errorf(push.CodeValidation, "vendorQuotas.%s.timeZone: %v", ch, err)
			}
		}
	})
	return perr
}
