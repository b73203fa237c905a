package query

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// relativeUnits are the units of a $relativeTime, in seconds (Parse Server's
// relativeTimeToDate; a year is 365 days, and there are no months).
var relativeUnits = map[string]int64{
	"yr": 365 * 86400, "yrs": 365 * 86400, "year": 365 * 86400, "years": 365 * 86400,
	"wk": 7 * 86400, "wks": 7 * 86400, "week": 7 * 86400, "weeks": 7 * 86400,
	"d": 86400, "day": 86400, "days": 86400,
	"hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
	"min": 60, "mins": 60, "minute": 60, "minutes": 60,
	"sec": 1, "secs": 1, "second": 1, "seconds": 1,
}

// maxRelativeSeconds bounds the sum of a $relativeTime: ±8.64e15 ms, the range of a
// JavaScript Date, beyond which Parse Server's relativeTimeToDate yields an Invalid Date. It
// also keeps now+sum far inside what time.Unix represents (which wraps, silently, for sums
// that still fit an int64 of seconds), and does not depend on now, so a where accepted when a
// push is scheduled cannot fail when it fires.
const maxRelativeSeconds = 8_640_000_000_000

// notDates are the built-in fields that never hold a date: a $relativeTime on them is an
// error, as Parse Server refuses it on a field whose schema type is not Date.
var notDates = map[string]bool{
	"objectId": true, "deviceType": true, "deviceToken": true, "installationId": true,
	"registrationId": true, "channels": true, "vendor": true, "deviceProfile": true,
	"apnsTopic": true, "apnsTeamId": true, "timeZone": true, "badge": true, "valid": true,
}

// relativeOperand reports whether x is a {"$relativeTime": text} operand and, if so, returns
// the Date it names, counted from now.
func relativeOperand(x any, now time.Time, op, field string) (value, bool, error) {
	m, ok := x.(map[string]any)
	if !ok {
		return value{}, false, nil
	}
	rt, ok := m["$relativeTime"]
	if !ok {
		return value{}, false, nil
	}
	if len(m) != 1 {
		return value{}, true, errQuery("%s on field %q: {\"$relativeTime\": …} takes no other keys", op, field)
	}
	if notDates[field] {
		return value{}, true, errQuery("$relativeTime works only on date fields, and %q holds no dates", field)
	}
	text, ok := rt.(string)
	if !ok {
		return value{}, true, errQuery("$relativeTime on field %q takes a string such as \"3 days ago\" or \"in 2 hours\"", field)
	}
	t, err := relativeTime(text, now)
	if err != nil {
		return value{}, true, errQuery("$relativeTime %q on field %q: %s", clip(text), field, err.Error())
	}
	return value{kind: kindDate, t: t}, true, nil
}

// errRelativeOperator refuses a $relativeTime anywhere but under $lt, $lte, $gt or $gte.
func errRelativeOperator(field string) error {
	return errQuery("$relativeTime on field %q works only with $lt, $lte, $gt and $gte", field)
}

type relativeError string

func (e relativeError) Error() string { return string(e) }

// relativeTime reads Parse Server's relative times: "now"; "<n> <unit> [<n> <unit> …] ago";
// "in <n> <unit> [<n> <unit> …]". Each n is an integer, each unit one of relativeUnits;
// case does not matter. The result is now moved by the sum, back for "ago", forward for "in".
func relativeTime(text string, now time.Time) (time.Time, error) {
	parts := strings.Fields(strings.ToLower(text))
	if len(parts) == 1 && parts[0] == "now" {
		return now, nil
	}
	future := len(parts) > 0 && parts[0] == "in"
	past := len(parts) > 0 && parts[len(parts)-1] == "ago"
	switch {
	case future && past:
		return time.Time{}, relativeError("a time cannot both start with 'in' and end with 'ago'")
	case future:
		parts = parts[1:]
	case past:
		parts = parts[:len(parts)-1]
	default:
		return time.Time{}, relativeError("a time is \"now\", starts with 'in' or ends with 'ago'")
	}
	if len(parts)%2 != 0 {
		return time.Time{}, relativeError("a number without its unit, or a unit without its number")
	}
	var secs int64
	for i := 0; i < len(parts); i += 2 {
		n, err := strconv.ParseInt(parts[i], 10, 64)
		if err != nil {
			return time.Time{}, relativeError("'" + clip(parts[i]) + "' is not an integer")
		}
		unit, ok := relativeUnits[parts[i+1]]
		if !ok {
			return time.Time{}, relativeError("unknown unit '" + clip(parts[i+1]) + "': use yr, wk, d, hr, min or sec (or their long forms)")
		}
		if n > math.MaxInt64/unit || n < math.MinInt64/unit {
			return time.Time{}, relativeError("out of range")
		}
		next := secs + n*unit
		if (n > 0 && next < secs) || (n < 0 && next > secs) {
			return time.Time{}, relativeError("out of range")
		}
		secs = next
	}
	if secs > maxRelativeSeconds || secs < -maxRelativeSeconds {
		return time.Time{}, relativeError("out of range")
	}
	if past {
		if secs == math.MinInt64 {
			return time.Time{}, relativeError("out of range")
		}
		secs = -secs
	}
	base := now.Unix()
	if (secs > 0 && base > math.MaxInt64-secs) || (secs < 0 && base < math.MinInt64-secs) {
		return time.Time{}, relativeError("out of range")
	}
	return time.Unix(base+secs, int64(now.Nanosecond())).UTC(), nil
}
