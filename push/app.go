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
	CreatedAt   time.Time                  `json:"createdAt"`
	UpdatedAt   time.Time                  `json:"updatedAt"`
}

// AppSettings are the per-app knobs of the spec.
type AppSettings struct {
	ClientPush     bool    `json:"clientPush"`     // false (default): pushes need the master key
	CallsPerMinute int     `json:"callsPerMinute"` // push calls per minute, default 600, at most 9600
	DailyVolume    int64   `json:"dailyVolume"`    // person-times per day, default 1,000,000
	Edition        Edition `json:"edition"`        // china | international
	Buckets        int     `json:"buckets"`        // power of two, fixed at creation
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
