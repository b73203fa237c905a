package sender

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

var quotaSpent = gateway.Reply{Kind: gateway.KindQuota, Reason: "vivo 10070 daily quota exceeded"}

// quotaUntil answers quotaSpent to requests before reset, then sent.
func quotaUntil(f *fakeGateway, reset time.Time) func(int) gateway.Reply {
	return func(int) gateway.Reply {
		if time.Now().Before(reset) {
			return quotaSpent
		}
		return gateway.Reply{Kind: gateway.KindSent}
	}
}

// A spent daily quota parks the app+vendor until the next China midnight: no request reaches
// the gateway meanwhile, and every delivery (no expiration) is sent after the reset.
func TestSenderQuotaParksUntilReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeGateway{}
		reset := quotaReset(time.Now(), 0)
		f.reply = quotaUntil(f, reset)
		d, set := outageEnv(t, f, nil)
		go func() {
			time.Sleep(time.Until(reset) / 2)
			synctest.Wait()
			if got := gauge(set, `pushd_sender_quota_parked{channel="apns"}`); got != "4" {
				t.Errorf("mid-park: %s deliveries parked, want the 4 workers'", got)
			}
		}()
		res := send(t, d, deliveries(20))
		for i, r := range res {
			if r.Outcome != push.OutcomeSent {
				t.Fatalf("delivery %d: %+v", i, r)
			}
		}
		var before, after int
		for _, at := range f.requests() {
			if f.start.Add(at).Before(reset) {
				before++
			} else {
				after++
			}
		}
		if before > 4 || after != 20 {
			t.Errorf("%d requests before the reset (want at most the 4 in flight), %d after (want 20)", before, after)
		}
		if got := gauge(set, `pushd_sender_quota_parks_total{channel="apns"}`); got != "1" {
			t.Errorf("quota parks %s, want 1", got)
		}
		if got := gauge(set, `pushd_sender_deliveries_total{channel="apns",outcome="failed"}`); got != "0" {
			t.Errorf("failed %s, want 0", got)
		}
	})
}

// Deliveries whose push expires before the quota resets are failed with the quota's reason
// when the push expires, not at once, and the gateway is not asked again meanwhile.
func TestSenderQuotaFailsWhenThePushExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeGateway{}
		reset := quotaReset(time.Now(), 0)
		f.reply = quotaUntil(f, reset)
		d, set := outageEnv(t, f, nil)
		ds := deliveries(12)
		exp := time.Now().Add(time.Hour)
		if !exp.Before(reset) {
			t.Fatal("synctest's clock starts within an hour of a China midnight")
		}
		for i := range ds {
			m := *ds[i].Message
			m.Expiration = exp
			ds[i].Message = &m
		}
		res := send(t, d, ds)
		if took := time.Since(f.start); took != time.Hour {
			t.Errorf("settled after %s, want at the expiration (1h)", took)
		}
		for i, r := range res {
			if r.Outcome != push.OutcomeFailed || !strings.Contains(r.Reason, "vivo 10070 daily quota exceeded") {
				t.Fatalf("delivery %d: %+v, want failed with the quota reason", i, r)
			}
		}
		if n := len(f.requests()); n > 4 {
			t.Errorf("%d requests, want only the 4 in flight when the quota was spent", n)
		}
		if got := gauge(set, `pushd_sender_deliveries_total{channel="apns",outcome="failed"}`); got != "12" {
			t.Errorf("failed %s, want 12", got)
		}
	})
}

// Deliveries that waited for a quota reset get a whole retry horizon after it: a gateway
// that answers 503 for a minute after the reset costs none of them (their first attempt, before
// the park, was hours earlier).
func TestSenderQuotaResetStartsANewRetryHorizon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeGateway{}
		reset := quotaReset(time.Now(), 0)
		f.reply = func(int) gateway.Reply {
			switch now := time.Now(); {
			case now.Before(reset):
				return quotaSpent
			case now.Before(reset.Add(time.Minute)):
				return unavailable
			}
			return gateway.Reply{Kind: gateway.KindSent}
		}
		d, _ := outageEnv(t, f, nil)
		for i, r := range send(t, d, deliveries(20)) {
			if r.Outcome != push.OutcomeSent {
				t.Fatalf("delivery %d: %+v", i, r)
			}
		}
	})
}

// A quota answer that says when the window resets (Retry-After) parks until then.
func TestSenderQuotaHonoursTheGatewaysReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeGateway{}
		reset := time.Now().Add(10 * time.Minute)
		f.reply = func(int) gateway.Reply {
			if time.Now().Before(reset) {
				return gateway.Reply{Kind: gateway.KindQuota, Reason: "oppo 33 daily message limit exceeded", RetryAfter: time.Until(reset)}
			}
			return gateway.Reply{Kind: gateway.KindSent}
		}
		d, _ := outageEnv(t, f, nil)
		for i, r := range send(t, d, deliveries(8)) {
			if r.Outcome != push.OutcomeSent {
				t.Fatalf("delivery %d: %+v", i, r)
			}
		}
		if took := time.Since(f.start); took != 10*time.Minute {
			t.Errorf("sent after %s, want at the gateway's reset (10m)", took)
		}
	})
}

func TestSenderQuotaReset(t *testing.T) {
	for _, c := range []struct{ now, want string }{
		{"2026-11-25T15:59:59Z", "2026-11-25T16:00:00Z"}, // 23:59:59 in China
		{"2026-11-25T16:00:00Z", "2026-11-26T16:00:00Z"}, // 00:00 in China: a whole day
		{"2026-12-31T20:00:00Z", "2027-01-01T16:00:00Z"},
	} {
		now, _ := time.Parse(time.RFC3339, c.now)
		if got := quotaReset(now, 0).UTC().Format(time.RFC3339); got != c.want {
			t.Errorf("reset at %s: %s, want %s", c.now, got, c.want)
		}
	}
}
