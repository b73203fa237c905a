package push

import (
	"fmt"
	"time"
)

// VendorQuota is an app's budget on one vendor channel. Zero fields are "not configured": the
// vendor's own replies (vivo 10070, OPPO 33, Mi and Meizu quota answers) still park it.
type VendorQuota struct {
	// Daily is how many messages of the system class (and of any class when MarketingDaily is
	// 0) the vendor accepts per quota day.
	Daily int64 `json:"daily,omitempty"`
	// MarketingDaily is the quota day's budget of marketing-class messages, counted apart from
	// Daily (vivo and OPPO count the two classes apart); 0: marketing counts against Daily.
	MarketingDaily int64 `json:"marketingDaily,omitempty"`
	// PerSecond caps the app's deliveries per second on the vendor across the cluster (with
	// senderRates, the lower wins).
	PerSecond float64 `json:"perSecond,omitempty"`
	// TimeZone is the IANA zone (or "UTC") whose midnight starts the vendor's quota day; ""
	// is China Standard Time (UTC+8), the China vendors' day.
	TimeZone string `json:"timeZone,omitempty"`
}

// VendorQuotas are an app's vendor budgets by channel. A struct, not a map, so that
// AppSettings stays comparable.
type VendorQuotas struct {
	HMS   VendorQuota `json:"hms,omitzero"`
	Honor VendorQuota `json:"honor,omitzero"`
	Mi    VendorQuota `json:"mi,omitzero"`
	Mz    VendorQuota `json:"mz,omitzero"`
	Oppo  VendorQuota `json:"oppo,omitzero"`
	Vivo  VendorQuota `json:"vivo,omitzero"`
}

// Of returns the budget of channel (zero for a channel without quotas: apns, fcm, direct).
func (q *VendorQuotas) Of(channel string) VendorQuota {
	switch channel {
	case ChannelHMS:
		return q.HMS
	case ChannelHonor:
		return q.Honor
	case ChannelMi:
		return q.Mi
	case ChannelMz:
		return q.Mz
	case ChannelOppo:
		return q.Oppo
	case ChannelVivo:
		return q.Vivo
	}
	return VendorQuota{}
}

// Each calls fn with every vendor channel and its budget.
func (q *VendorQuotas) Each(fn func(channel string, v VendorQuota)) {
	fn(ChannelHMS, q.HMS)
	fn(ChannelHonor, q.Honor)
	fn(ChannelMi, q.Mi)
	fn(ChannelMz, q.Mz)
	fn(ChannelOppo, q.Oppo)
	fn(ChannelVivo, q.Vivo)
}

// IsVendor says whether channel is one of the quota-counting vendor channels.
func IsVendor(channel string) bool {
	switch channel {
	case ChannelHMS, ChannelHonor, ChannelMi, ChannelMz, ChannelOppo, ChannelVivo:
		return true
	}
	return false
}

// ChinaTime is China Standard Time: the China vendors count their daily quotas by its days
// [unconfirmed: no vendor document names the time zone; their consoles show CST].
var ChinaTime = time.FixedZone("CST", 8*3600)

// Location is the quota day's time zone (ChinaTime for ""); an unknown zone is an error.
func (v VendorQuota) Location() (*time.Location, error) {
	if v.TimeZone == "" {
		return ChinaTime, nil
	}
	loc, err := time.LoadLocation(v.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", v.TimeZone)
	}
	return loc, nil
}

// Limit is the daily budget of class ("" is system); 0: none configured.
func (v VendorQuota) Limit(class string) int64 {
	if class == ClassMarketing && v.MarketingDaily > 0 {
		return v.MarketingDaily
	}
	return v.Daily
}

// QuotaClass is the budget a message of class counts against: marketing only when the
// vendor's budget has a marketing quota of its own, else system.
func (v VendorQuota) QuotaClass(class string) string {
	if class == ClassMarketing && v.MarketingDaily > 0 {
		return ClassMarketing
	}
	return ClassSystem
}

// QuotaWindow is the quota day containing now in loc: its name (the date in loc, the
// store's counter key part) and when it ends (the next midnight in loc, when the vendor's
// budget resets).
func QuotaWindow(now time.Time, loc *time.Location) (day string, end time.Time) {
	t := now.In(loc)
	y, m, d := t.Date()
	return t.Format(time.DateOnly), time.Date(y, m, d+1, 0, 0, 0, 0, loc)
}

// Deferred is a target held back by a spent vendor quota until its window ends (store table
// deferred, keyed by Until, app, vendor, push and target): everything needed to send it then.
type Deferred struct {
	AppID          string    `json:"appId"`
	Vendor         string    `json:"vendor"` // the vendor channel it waits for
	Class          string    `json:"class"`  // the quota class it counts against
	Until          time.Time `json:"until"`  // the window's end: when the re-driver sends it
	PushID         string    `json:"pushId"` // the push record's objectId
	NotificationID string    `json:"notificationId"`
	Prod           bool      `json:"prod,omitempty"`
	Policy         string    `json:"policy,omitempty"` // the push's channel policy
	Target         Target    `json:"target"`           // on Vendor; InstallationID set for a hybrid
	Message        *Message  `json:"message"`
	// Own is the own-channel message of a hybrid target (policies own_first, vendor_first):
	// at the re-drive, a connected own_first device, or a vendor_first refusal, takes it.
	Own *Message `json:"own,omitempty"`
	// Reason is why it was deferred (the vendor's answer, or the configured budget).
	Reason string `json:"reason"`
}

// Expires is when the target's push expires (zero: never).
func (d *Deferred) Expires() time.Time {
	if d.Message == nil {
		return time.Time{}
	}
	return d.Message.Expiration
}

// Key is the target's identity within its window: a second deferral of the same target (a task
// repeated after a crash) overwrites the first.
func (d *Deferred) Key() string {
	id := d.Target.ObjectID
	if id == "" {
		id = "d:" + d.Target.DeviceID
	}
	return d.PushID + "\x00" + id
}
