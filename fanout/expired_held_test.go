package fanout

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// heldSender is a recSender that also says which deliveries a gateway's quota held back.
type heldSender struct {
	*recSender
	held string // the channel whose deliveries are held
}

const heldReason = "vivo 10070 daily quota exceeded: the push expired while the vendor's daily quota was spent"

func (s *heldSender) HeldReason(_ context.Context, d *push.Delivery) (string, bool) {
	if d.Target.Channel == s.held {
		return heldReason, true
	}
	return "", false
}

// TestFanoutExpiredHeldByQuota: the targets of a push that expired before they were sent
// count failed with the Sender's reason when a gateway's quota held them back, and expired
// otherwise; none is handed to Send.
func TestFanoutExpiredHeldByQuota(t *testing.T) {
	e := newEnv(t)
	e.createApp(16, nil)
	e.seed(16, 200)
	want := expected(t, 200, `{}`)
	chans := map[string]int64{}
	for _, ch := range want {
		chans[ch]++
	}
	var held string
	for _, ch := range slices.Sorted(func(yield func(string) bool) {
		for ch := range chans {
			if !yield(ch) {
				return
			}
		}
	}) {
		if ch != push.ChannelAPNs {
			held = ch
			break
		}
	}
	if held == "" || len(chans) < 2 {
		t.Fatalf("the seed reaches channels %v: want apns and another", chans)
	}
	snd := &heldSender{recSender: newRecSender(), held: held}
	e.start(DefaultWorkerConfig(), snd, 1)
	job := e.submit(push.Job{ExpiresAt: time.Now().Add(-time.Minute)})
	rec := e.waitDone(job.NotificationObjectID)
	for ch, n := range chans {
		got := rec.Counts[ch]
		wantT := push.Tally{Targets: n, Expired: n}
		if ch == held {
			wantT = push.Tally{Targets: n, Failed: n, FailedBy: map[string]int64{FailureClass(heldReason): n}}
		}
		if !got.Equal(wantT) {
			t.Errorf("channel %s: %+v, want %+v", ch, got, wantT)
		}
	}
	if len(rec.Errors) != 1 || rec.Errors[0] != heldReason {
		t.Errorf("errors %q, want the held reason once", rec.Errors)
	}
	if snd.count() != 0 {
		t.Errorf("sent %d deliveries of an expired push", snd.count())
	}
}
