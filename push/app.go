package push

import (
	"encoding/json"
	"time"
)

// Edition decides which vendor channels an app may use: hms, mz, vivo and oppo exist only in
// the China edition, fcm only in the international edition; mi and the own channel in both.
type Edition string

const (
	EditionChina         Edition = "china"
	EditionInternational Edition = "international"
)

// Default app settings, from the spec's limits table.
const (
	DefaultCallsPerMinute = 600
	MaxCallsPerMinute     = 9600
	DefaultDailyVolume    = 1_000_000
	DefaultBuckets        = 256 // a power of two, fixed at creation: the unit of fan-out parallelism
)

// App is one tenant. Keys are secrets: they are never written to logs or echoed by the admin API.
type App struct {
	ID        string      `json:"appId"`
	Name      string      `json:"name"`
	AppKey    string      `json:"appKey"`
	MasterKey string      `json:"masterKey"`
	Settings  AppSettings `json:"settings"`
	// Credentials holds gateway credentials by kind (apns, fcm, mi, ...). Their shapes are
	// owned by the sender packages; the store keeps them opaque.
	Credentials map[string]json.RawMessage `json:"credentials,omitempty"`
	// Webhook is where per-device delivery events go (package webhook); zero: none.
	Webhook   AppWebhook `json:"webhook,omitzero"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

// AppWebhook is an app's delivery-event webhook. Secret signs each request; like the keys,
// it is never written to logs or echoed by the admin API.
type AppWebhook struct {
	URL    string `json:"url,omitempty"`
	Secret string `json:"secret,omitempty"`
}

// AppSettings are the per-app knobs of the spec.
type AppSettings struct {
	ClientPush     bool    `json:"clientPush"`     // false (default): pushes need the master key
	CallsPerMinute int     `json:"callsPerMinute"` // push calls per minute, default 600, at most 9600
	DailyVolume    int64   `json:"dailyVolume"`    // person-times per day, default 1,000,000
	Edition        Edition `json:"edition"`        // china | international
	Buckets        int     `json:"buckets"`        // power of two, fixed at creation
	// SenderRates caps the app's deliveries per second per channel across the cluster; a
	// channel left 0 takes the nodes' --sender-rates. Each sending node takes its share.
	SenderRates ChannelRates `json:"senderRates"`
	// ChannelPolicy is the app's default channel policy for hybrid Android installations
	// (push/policy.go); "" is PolicyVendor. A push's channel_policy wins.
	ChannelPolicy string `json:"channelPolicy,omitempty"`
	// VendorQuotas are the app's vendor budgets: daily quota per message class and per-second
	// limit (push/quota.go; a pushd extension, issue 20 item 2).
	VendorQuotas VendorQuotas `json:"vendorQuotas,omitzero"`
	// MessageClass is the app's default message class (push/class.go); "" is ClassSystem.
	// A push's message_class wins.
	MessageClass string `json:"messageClass,omitempty"`
	// Marketing limits the app's marketing pushes per device (push/class.go).
	Marketing MarketingRules `json:"marketing,omitzero"`
}

// ChannelRates are deliveries per second per gateway channel, cluster-wide; 0 is "not set".
// A struct, not a map, so that AppSettings stays comparable.
type ChannelRates struct {
	APNs  float64 `json:"apns,omitempty"`
	FCM   float64 `json:"fcm,omitempty"`
	HMS   float64 `json:"hms,omitempty"`
	Honor float64 `json:"honor,omitempty"`
	Mi    float64 `json:"mi,omitempty"`
	Mz    float64 `json:"mz,omitempty"`
	Oppo  float64 `json:"oppo,omitempty"`
	Vivo  float64 `json:"vivo,omitempty"`
}

// Of returns the rate of channel, 0 when it is not set (or not a gateway channel).
func (r ChannelRates) Of(channel string) float64 {
	switch channel {
	case ChannelAPNs:
		return r.APNs
	case ChannelFCM:
		return r.FCM
	case ChannelHMS:
		return r.HMS
	case ChannelHonor:
		return r.Honor
	case ChannelMi:
		return r.Mi
	case ChannelMz:
		return r.Mz
	case ChannelOppo:
		return r.Oppo
	case ChannelVivo:
		return r.Vivo
	}
	return 0
}

// Each calls fn with every channel and its rate, set or not.
func (r ChannelRates) Each(fn func(channel string, rate float64)) {
	fn(ChannelAPNs, r.APNs)
	fn(ChannelFCM, r.FCM)
	fn(ChannelHMS, r.HMS)
	fn(ChannelHonor, r.Honor)
	fn(ChannelMi, r.Mi)
	fn(ChannelMz, r.Mz)
	fn(ChannelOppo, r.Oppo)
	fn(ChannelVivo, r.Vivo)
}

// DefaultSettings returns the settings a new app gets.
func DefaultSettings() AppSettings {
	return AppSettings{
		CallsPerMinute: DefaultCallsPerMinute,
		DailyVolume:    DefaultDailyVolume,
		Edition:        EditionChina,
		Buckets:        DefaultBuckets,
	}
}
