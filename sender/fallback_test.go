package sender

import (
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// TestSenderQuotaRefusesFallbackDeliveries: past Xiaomi's day quota (the simulator, over real
// HTTP), a delivery with an own-channel fallback (vendor_first) is refused at once with the
// quota's reason and Refused set, while the app+vendor is parked, instead of waiting for the
// reset; a delivery without one still waits and goes out the next day. A delivery the vendor
// accepts is not marked refused.
func TestSenderQuotaRefusesFallbackDeliveries(t *testing.T) {
	e, v := newMiQuota(t, 3)
	own := &push.Message{Channel: push.ChannelDirect, Body: []byte(`{"alert":"hi"}`)}
	ds := make([]push.Delivery, 6)
	for i := range ds {
		ds[i] = v.delivery(i, time.Time{})
		ds[i].Fallback = own
	}
	start := e.clock.now()
	res := send(t, e.d, ds)
	sent, refused := 0, 0
	for i, r := range res {
		switch {
		case r.Outcome == push.OutcomeSent && !r.Refused:
			sent++
		case r.Outcome == push.OutcomeFailed && r.Refused && r.Reason != "":
			refused++
		default:
			t.Errorf("delivery %d: %+v", i, r)
		}
	}
	if sent != 3 || refused != 3 {
		t.Errorf("sent %d, refused %d: want the quota's 3 sent and 3 refused", sent, refused)
	}
	if waited := e.clock.now().Sub(start); waited > time.Hour {
		t.Errorf("the fallback deliveries waited %v for the quota reset", waited)
	}
	// Parked now: a fallback delivery is refused without reaching the vendor; one without a
	// fallback waits for the next day and is sent.
	before := v.stats().Requests
	res = send(t, e.d, []push.Delivery{func() push.Delivery { d := v.delivery(10, time.Time{}); d.Fallback = own; return d }()})
	if res[0].Outcome != push.OutcomeFailed || !res[0].Refused || v.stats().Requests != before {
		t.Errorf("fallback delivery while parked: %+v, %d requests", res[0], v.stats().Requests-before)
	}
	res = send(t, e.d, []push.Delivery{v.delivery(11, time.Time{})})
	if res[0].Outcome != push.OutcomeSent || res[0].Refused {
		t.Errorf("delivery without a fallback: %+v, want sent after the reset", res[0])
	}
	if waited := e.clock.now().Sub(start); waited < 10*time.Hour { // the next China day is 14 h away
		t.Errorf("sent %v after the quota answer: it did not wait for the next day", waited)
	}
}
