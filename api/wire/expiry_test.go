package wire

import (
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// TestWireExpirationIntervalFromPushTime: expiration_interval counts from push_time whatever
// its distance (spec), not from the call when push_time is under a minute away or past.
func TestWireExpirationIntervalFromPushTime(t *testing.T) {
	at := func(d time.Duration) string { return testNow.Add(d).Format(time.RFC3339Nano) }
	for _, c := range []struct {
		name     string
		pushTime time.Duration // from now
		ivl      int
		want     time.Time // zero: refused
	}{
		{"scheduled", time.Hour, 60, testNow.Add(time.Hour + time.Minute)},
		{"30 s away: sent at once, expires 60 s after push_time", 30 * time.Second, 60, testNow.Add(90 * time.Second)},
		{"10 s ago: expires 50 s from now", -10 * time.Second, 60, testNow.Add(50 * time.Second)},
		{"an hour ago, interval of a minute: already expired", -time.Hour, 60, time.Time{}},
		{"exactly expiring now", -time.Minute, 60, time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"data":{"alert":"x"},"push_time":"` + at(c.pushTime) + `","expiration_interval":` + itoa(c.ivl) + `}`
			r, perr := DecodePush([]byte(body), cn, "", testNow)
			if c.want.IsZero() {
				if perr == nil || perr.Code != push.CodeValidation || !strings.Contains(perr.Message, "already passed") {
					t.Fatalf("%s: got %+v, %v; want refused", body, r, perr)
				}
				return
			}
			if perr != nil {
				t.Fatalf("%s: %v", body, perr)
			}
			if !r.ExpiresAt.Equal(c.want) {
				t.Fatalf("%s: expires %v, want %v", body, r.ExpiresAt, c.want)
			}
		})
	}
	// Without push_time the interval counts from the call.
	r, perr := DecodePush([]byte(`{"data":{"alert":"x"},"expiration_interval":60}`), cn, "", testNow)
	if perr != nil || !r.ExpiresAt.Equal(testNow.Add(time.Minute)) {
		t.Fatalf("no push_time: %+v, %v", r, perr)
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	if s == "" {
		return "0"
	}
	return s
}
