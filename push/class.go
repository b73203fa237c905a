package push

import (
	"fmt"
	"time"
)

// Message classes (the app setting messageClass and the push parameter message_class, pushd
// extensions; docs/decisions.md "Message class (issue 20 item 3)"). Every China vendor splits
// pushes into an uncapped class (system, service, communication, "private") and a capped one
// (operational, marketing, news, "public") since 2023 (gateways.md §8a); the senders map the
// class to each vendor's fields, and fan-out applies an app's marketing rules (daily cap per
// device, quiet hours) to marketing pushes on every channel.
const (
	ClassSystem    = "system"    // transactional: chat, orders, account, reminders (the default)
	ClassMarketing = "marketing" // operational, promotional, news
)

// ValidMessageClass says whether c is a message class ("" is not: callers default it).
func ValidMessageClass(c string) bool { return c == ClassSystem || c == ClassMarketing }

// MessageClassOf is the class a push is sent as: its message_class, else its app's
// messageClass, else ClassSystem.
func MessageClassOf(job *Job, app *App) string {
	switch {
	case job.MessageClass != "":
		return job.MessageClass
	case app.Settings.MessageClass != "":
		return app.Settings.MessageClass
	}
	return ClassSystem
}

// capped are the second-level categories of the capped class (operational, "public") in vivo's
// and OPPO's classification; the others (IM, ACCOUNT, ORDER, ...) are system, "private"
// [unconfirmed: secondary sources, as in loadtest/sim].
var capped = map[string]bool{"NEWS": true, "CONTENT": true, "MARKETING": true, "SOCIAL": true}

// CategoryClass is the message class of a vivo or OPPO category (data.vivo.category,
// data.oppo.category).
func CategoryClass(category string) string {
	if capped[category] {
		return ClassMarketing
	}
	return ClassSystem
}

// Reasons a marketing target is not sent (Result.Reason and the record's errors).
const (
	ReasonDailyCap   = "daily_cap"   // the device had its day's marketing pushes (MarketingRules.DailyCap)
	ReasonQuietHours = "quiet_hours" // the push reached the device inside the app's quiet hours
)

// MarketingRules are an app's limits on marketing pushes (AppSettings.Marketing), applied by
// fan-out on every channel. The zero value limits nothing.
type MarketingRules struct {
	// DailyCap > 0 is how many marketing pushes one installation (or listed device id) may
	// get per day; the day is QuietHours.TZ's, else UTC's. 0: no cap.
	DailyCap int `json:"dailyCap,omitempty"`
	// QuietHours, when set, is the daily window in which no marketing push is sent.
	QuietHours QuietHours `json:"quietHours,omitzero"`
}

// QuietHours is a daily window [From, To) of wall-clock times "HH:MM" in the IANA time zone
// TZ (UTC when empty); From after To spans midnight ("22:00" to "08:00"). Zero: none.
type QuietHours struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	TZ   string `json:"tz,omitempty"`
}

// IsZero says no quiet hours are set.
func (q QuietHours) IsZero() bool { return q == QuietHours{} }

// Validate checks the rules; the error names the field.
func (m MarketingRules) Validate() error {
	if m.DailyCap < 0 || m.DailyCap > maxDailyCap {
		return fmt.Errorf("marketing.dailyCap must be 0 (no cap) to %d", maxDailyCap)
	}
	if m.QuietHours.IsZero() {
		return nil
	}
	q := m.QuietHours
	from, ok1 := clockMinutes(q.From)
	to, ok2 := clockMinutes(q.To)
	switch {
	case !ok1 || !ok2:
		return fmt.Errorf("marketing.quietHours from and to must be times HH:MM (00:00 to 23:59)")
	case from == to:
		return fmt.Errorf("marketing.quietHours from and to must differ")
	}
	if _, err := time.LoadLocation(q.TZ); err != nil {
		return fmt.Errorf("marketing.quietHours tz %q is not an IANA time zone", q.TZ)
	}
	return nil
}

// maxDailyCap bounds DailyCap: the store keeps up to that many push ids per device and day.
const maxDailyCap = 100

// Location is the rules' time zone: QuietHours.TZ, else UTC (also when TZ cannot be loaded,
// which Validate refuses).
func (m MarketingRules) Location() *time.Location {
	if m.QuietHours.TZ == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(m.QuietHours.TZ)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Day is the day that now falls on for the daily cap, "2006-01-02" in the rules' time zone.
func (m MarketingRules) Day(now time.Time) string {
	return now.In(m.Location()).Format(time.DateOnly)
}

// Quiet says whether now is inside the quiet hours.
func (m MarketingRules) Quiet(now time.Time) bool {
	if m.QuietHours.IsZero() {
		return false
	}
	from, ok1 := clockMinutes(m.QuietHours.From)
	to, ok2 := clockMinutes(m.QuietHours.To)
	if !ok1 || !ok2 {
		return false
	}
	t := now.In(m.Location())
	at := t.Hour()*60 + t.Minute()
	if from < to {
		return at >= from && at < to
	}
	return at >= from || at < to
}

// clockMinutes parses "HH:MM" as minutes after midnight.
func clockMinutes(s string) (int, bool) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}
