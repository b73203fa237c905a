package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/pushd/pushd/push"
)

// askedPresence is a Presence that records each query and answers with online (nil: an error).
type askedPresence struct {
	mu     sync.Mutex
	calls  [][]string
	online func(iid string) bool
}

func (p *askedPresence) Online(_ context.Context, _ string, iids []string, online []bool) error {
	p.mu.Lock()
	p.calls = append(p.calls, slices.Clone(iids))
	p.mu.Unlock()
	if p.online == nil {
		return errors.New("gateways unreachable")
	}
	for i, iid := range iids {
		online[i] = p.online(iid)
	}
	return nil
}

// TestChannelPolicyOwnFirstAsksOncePerBatch: own_first asks the presence once per batch with
// every hybrid target of the batch (not once per target), each target once; when the presence
// fails, every target goes to its vendor and is counted there once.
func TestChannelPolicyOwnFirstAsksOncePerBatch(t *testing.T) {
	const buckets = 16
	e := newEnv(t)
	e.createApp(buckets, func(s *push.AppSettings) { s.ChannelPolicy = push.PolicyOwnFirst })
	e.seedHybrid(buckets, 30) // hid-i: fcm when i%3 == 0, HMS when 1, Honor when 2
	snd := newRecSender()
	p := &askedPresence{online: func(iid string) bool { return iid == "hid-1" || iid == "hid-2" }}
	e.startWithPresence(snd, p)
	where := json.RawMessage(`{"vendor":{"$in":["HMS","honor"]}}`)

	rec := e.waitDone(e.submit(push.Job{Kind: push.JobQuery, Where: where}).NotificationObjectID)
	if got := [3]int64{rec.Counts[push.ChannelDirect].Targets, rec.Counts[push.ChannelHMS].Targets, rec.Counts[push.ChannelHonor].Targets}; got != [3]int64{2, 9, 9} {
		t.Errorf("targets direct/hms/honor %v, want [2 9 9]", got)
	}
	p.mu.Lock()
	calls := p.calls
	p.calls = nil
	p.online = nil // from now on the presence fails
	p.mu.Unlock()
	var asked []string
	for _, c := range calls {
		asked = append(asked, c...)
	}
	slices.Sort(asked)
	if len(asked) != 20 || len(slices.Compact(slices.Clone(asked))) != 20 {
		t.Errorf("presence asked about %d installations (%v), want each of the 20 hybrid targets once", len(asked), asked)
	}
	if len(calls) >= len(asked) {
		t.Errorf("presence asked %d times for %d targets: once per target, not per batch", len(calls), len(asked))
	}

	rec = e.waitDone(e.submit(push.Job{Kind: push.JobQuery, Where: where}).NotificationObjectID)
	if got := [3]int64{rec.Counts[push.ChannelDirect].Targets, rec.Counts[push.ChannelHMS].Targets, rec.Counts[push.ChannelHonor].Targets}; got != [3]int64{0, 10, 10} {
		t.Errorf("targets direct/hms/honor with the presence failing %v, want [0 10 10]", got)
	}
	if s := rec.Counts[push.ChannelHMS].Sent + rec.Counts[push.ChannelHonor].Sent; s != 20 {
		t.Errorf("sent on the vendors %d, want 20", s)
	}
}
