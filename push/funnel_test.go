package push

import (
	"reflect"
	"testing"
	"time"
)

func TestFunnelOf(t *testing.T) {
	exp := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	before, after := exp.Add(FunnelGrace-time.Nanosecond), exp.Add(FunnelGrace)
	for _, tc := range []struct {
		name     string
		t        Tally
		exp, now time.Time
		want     Funnel
	}{
		{"dead tokens are failed, by class", Tally{Targets: 6, Sent: 3, Failed: 1, InvalidTokens: 2, FailedBy: map[string]int64{FailConfig: 1}, Arrivals: 2}, exp, before,
			Funnel{Targets: 6, Sent: 3, Arrived: 2, Arrivals: 2, Failed: 3, InvalidTokens: 2, FailedBy: map[string]int64{FailConfig: 1, FailInvalidToken: 2}}},
		{"failures counted before classes", Tally{Targets: 2, Failed: 2}, time.Time{}, before,
			Funnel{Targets: 2, Failed: 2, FailedBy: map[string]int64{FailUnknown: 2}}},
		{"own channel queued, not cached yet", Tally{Targets: 5, Sent: 2}, exp, before,
			Funnel{Targets: 5, Sent: 2, Pending: 3, FailedBy: map[string]int64{}}},
		{"the gateway counted before fan-out's task finished", Tally{Targets: 0, Sent: 2, Expired: 1}, exp, before,
			Funnel{Targets: 3, Sent: 2, Expired: 1, FailedBy: map[string]int64{}}},
		{"past the expiry's grace nothing is pending", Tally{Targets: 5, Sent: 2, Deferred: 1}, exp, after,
			Funnel{Targets: 5, Sent: 2, Deferred: 1, Expired: 2, FailedBy: map[string]int64{}}},
		{"no expiry: pending stays", Tally{Targets: 5, Sent: 2}, time.Time{}, after.Add(1000 * time.Hour),
			Funnel{Targets: 5, Sent: 2, Pending: 3, FailedBy: map[string]int64{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FunnelOf(tc.t, tc.exp, tc.now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if got.Targets != got.Sent+got.Failed+got.Expired+got.Deferred+got.Pending {
				t.Errorf("invariant broken: %+v", got)
			}
		})
	}
}

func TestTallyAddMergesFailureClasses(t *testing.T) {
	a := Tally{Targets: 1, Failed: 1, FailedBy: map[string]int64{FailRejected: 1}}
	b := Tally{Targets: 2, Deferred: 1, Failed: 1, FailedBy: map[string]int64{FailRejected: 1, FailQuota: 0}}
	var sum Tally
	sum.Add(a)
	sum.Add(b)
	want := Tally{Targets: 3, Deferred: 1, Failed: 2, FailedBy: map[string]int64{FailRejected: 2}}
	if !sum.Equal(want) {
		t.Errorf("sum %+v, want %+v", sum, want)
	}
	if a.FailedBy[FailRejected] != 1 {
		t.Errorf("adding changed an operand: %+v", a)
	}
	if !(Tally{FailedBy: map[string]int64{FailQuota: 0}}).IsZero() {
		t.Error("a zero class is not zero")
	}
}
