package query

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

func TestRelativeTime(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 891_000_000, time.UTC)
	for _, c := range []struct {
		text string
		want time.Time
	}{
		{"now", now},
		{"  NOW ", now},
		{"3 days ago", now.Add(-72 * time.Hour)},
		{"in 2 hours", now.Add(2 * time.Hour)},
		{"1 yr 2 wks 3 d 4 hrs 5 mins 6 secs ago", now.Add(-(365*24*time.Hour + 14*24*time.Hour + 3*24*time.Hour + 4*time.Hour + 5*time.Minute + 6*time.Second))},
		{"in 1 year 1 week 1 day 1 hour 1 minute 1 second", now.Add(365*24*time.Hour + 7*24*time.Hour + 24*time.Hour + time.Hour + time.Minute + time.Second)},
		{"2 years 3 weeks 4 days 5 hour 6 min 7 sec ago", now.Add(-(2*365*24*time.Hour + 21*24*time.Hour + 4*24*time.Hour + 5*time.Hour + 6*time.Minute + 7*time.Second))},
		{"In 12 Seconds", now.Add(12 * time.Second)},
		{"-1 day ago", now.Add(24 * time.Hour)},
		{"in +3 min", now.Add(3 * time.Minute)},
		{"ago", now}, // Parse reads an empty sum as now
		{"in", now},
		{"1000 years ago", now.AddDate(0, 0, -365000)},
	} {
		got, err := relativeTime(c.text, now)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("relativeTime(%q) = %v, %v; want %v", c.text, got, err, c.want)
		}
	}
	for _, text := range []string{
		"", "3 days", "yesterday", "in 3 days ago", "3 ago", "in days", "1.5 days ago", "1e3 days ago",
		"3 months ago", "x days ago", "in 3 fortnights", "9223372036854775807 years ago", "in 300000000000 years",
		// Sums that fit int64 seconds but not a time.Time (time.Unix wraps), nor a JavaScript Date.
		"in 292471208600 years", "292471208600 years ago", "in 300000 years",
	} {
		if got, err := relativeTime(text, now); err == nil {
			t.Errorf("relativeTime(%q) = %v, want an error", text, got)
		}
	}
}

// TestQueryRelativeTime checks $relativeTime against both stored date forms, counted from
// the instant given to ParseAt.
func TestQueryRelativeTime(t *testing.T) {
	now := time.Date(2024, 3, 8, 12, 0, 0, 0, time.UTC) // install's updatedAt is 7 days before
	for _, c := range []struct {
		where string
		want  bool
	}{
		{`{"updatedAt":{"$gte":{"$relativeTime":"7 days ago"}}}`, true},
		{`{"updatedAt":{"$gt":{"$relativeTime":"7 days ago"}}}`, false},
		{`{"updatedAt":{"$gt":{"$relativeTime":"8 days ago"}}}`, true},
		{`{"updatedAt":{"$lt":{"$relativeTime":"6 days ago"}}}`, true},
		{`{"updatedAt":{"$lte":{"$relativeTime":"1 week ago"}}}`, true},
		{`{"updatedAt":{"$lt":{"$relativeTime":"1 week ago"}}}`, false},
		{`{"updatedAt":{"$gt":{"$relativeTime":"30 days ago"},"$lt":{"$relativeTime":"now"}}}`, true},
		{`{"createdAt":{"$lt":{"$relativeTime":"8 years ago"}}}`, true},
		{`{"birthday":{"$lt":{"$relativeTime":"24 years ago"}}}`, true}, // a Date object
		{`{"birthday":{"$gt":{"$relativeTime":"24 years ago"}}}`, false},
		{`{"profile.name":{"$gt":{"$relativeTime":"now"}}}`, false}, // a string is no date
		{`{"$or":[{"updatedAt":{"$gt":{"$relativeTime":"1 day ago"}}},{"badge":5}]}`, true},
		{`{"$nor":[{"updatedAt":{"$gt":{"$relativeTime":"1 day ago"}}}]}`, true},
	} {
		q, err := ParseAt(json.RawMessage(c.where), now)
		if err != nil {
			t.Fatalf("ParseAt(%s): %v", c.where, err)
		}
		if got := q.Match(doc(t, install)); got != c.want {
			t.Errorf("Match(%s) = %v, want %v", c.where, got, c.want)
		}
	}
	// The same query read at another instant selects differently.
	where := json.RawMessage(`{"updatedAt":{"$gt":{"$relativeTime":"2 days ago"}}}`)
	for at, want := range map[time.Time]bool{now: false, now.Add(-6 * 24 * time.Hour): true} {
		q, err := ParseAt(where, at)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Match(doc(t, install)); got != want {
			t.Errorf("at %v: Match = %v, want %v", at, got, want)
		}
	}
}

func TestQueryRelativeTimeErrors(t *testing.T) {
	for _, c := range []struct{ where, msg string }{
		{`{"updatedAt":{"$relativeTime":"1 day ago"}}`, "only with $lt, $lte, $gt and $gte"},
		{`{"updatedAt":{"$eq":{"$relativeTime":"1 day ago"}}}`, "only with $lt, $lte, $gt and $gte"},
		{`{"updatedAt":{"$ne":{"$relativeTime":"1 day ago"}}}`, "only with $lt, $lte, $gt and $gte"},
		{`{"updatedAt":{"$in":[{"$relativeTime":"1 day ago"}]}}`, "only with $lt, $lte, $gt and $gte"},
		{`{"updatedAt":{"$gt":{"$relativeTime":"1 day"}}}`, "ends with 'ago'"},
		{`{"updatedAt":{"$gt":{"$relativeTime":"in 1 day ago"}}}`, "both"},
		{`{"updatedAt":{"$gt":{"$relativeTime":"1 days 2 ago"}}}`, "without its unit"},
		{`{"updatedAt":{"$gt":{"$relativeTime":"2 months ago"}}}`, "unknown unit 'months'"},
		{`{"updatedAt":{"$gt":{"$relativeTime":"a day ago"}}}`, "'a' is not an integer"},
		{`{"updatedAt":{"$gt":{"$relativeTime":3}}}`, "takes a string"},
		{`{"updatedAt":{"$gt":{"$relativeTime":"now","x":1}}}`, "no other keys"},
		{`{"deviceType":{"$gt":{"$relativeTime":"now"}}}`, "holds no dates"},
		{`{"channels":{"$lt":{"$relativeTime":"now"}}}`, "holds no dates"},
		{`{"updatedAt":{"$gt":{"$relativeTime":"99999999999999 years ago"}}}`, "out of range"},
		{`{"updatedAt":{"$gt":{"$relativeTime":"in 292471208600 years"}}}`, "out of range"},
	} {
		_, err := ParseAt(json.RawMessage(c.where), time.Now())
		var perr *push.Error
		if !errors.As(err, &perr) || perr.Code != push.CodeInvalidQuery || !strings.Contains(perr.Message, c.msg) {
			t.Errorf("ParseAt(%s) = %v, want code %d with %q", c.where, err, push.CodeInvalidQuery, c.msg)
		}
	}
}
