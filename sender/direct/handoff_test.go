package direct_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/sender/direct"
)

// funcSender is a fake of the next sender: the handoff's own path (the log) is real.
type funcSender func(ctx context.Context, ds []push.Delivery, res []push.Result) error

func (f funcSender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	return f(ctx, ds, res)
}

// TestDirectHandoffRoutesOwnChannel: own-channel deliveries go to push.direct keyed by
// installation id (queued, or expired), the others to the next sender, results in place;
// then the gateway consuming push.direct caches what was queued.
func TestDirectHandoffRoutesOwnChannel(t *testing.T) {
	r := newRig(t, direct.Config{})
	lg, err := embedded.Open(r.st.DB(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lg.Close() })
	var passed []string
	next := funcSender(func(_ context.Context, ds []push.Delivery, res []push.Result) error {
		for i := range ds {
			passed = append(passed, ds[i].Target.DeviceID)
			res[i] = push.Result{Outcome: push.OutcomeSent}
		}
		return nil
	})
	h := direct.NewHandoff(next, lg)
	msg := &push.Message{Channel: push.ChannelDirect, Body: []byte(`{"alert":"hi"}`), Expiration: time.Now().Add(time.Hour)}
	old := &push.Message{Channel: push.ChannelDirect, Body: []byte(`{"alert":"old"}`), Expiration: time.Now().Add(-time.Second)}
	ios := &push.Message{Channel: push.ChannelAPNs, Body: []byte(`{}`)}
	ds := []push.Delivery{
		{AppID: testApp, NotificationObjectID: "h1", NotificationID: "n1", Message: ios, Target: push.Target{Channel: push.ChannelAPNs, DeviceID: "tok"}},
		{AppID: testApp, NotificationObjectID: "h1", NotificationID: "n1", Message: msg, Target: push.Target{Channel: push.ChannelDirect, DeviceID: "dev1"}},
		{AppID: testApp, NotificationObjectID: "h1", NotificationID: "n1", Message: old, Target: push.Target{Channel: push.ChannelDirect, DeviceID: "dev2"}},
	}
	res := make([]push.Result, len(ds))
	if err := h.Send(context.Background(), ds, res); err != nil {
		t.Fatal(err)
	}
	want := []push.Outcome{push.OutcomeSent, push.OutcomeQueued, push.OutcomeExpired}
	for i := range want {
		if res[i].Outcome != want[i] {
			t.Errorf("result %d = %v, want %v", i, res[i].Outcome, want[i])
		}
	}
	if len(passed) != 1 || passed[0] != "tok" {
		t.Errorf("next sender got %v, want [tok]", passed)
	}

	r.installation(t, "dev1", push.DeviceAndroid, "")
	r.record(t, "h1")
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan queue.Message, 1)
	done := make(chan error, 1)
	go func() {
		done <- lg.Consume(ctx, queue.TopicDirect, queue.GroupGateway, func(ctx context.Context, m queue.Message) error {
			if err := r.core.Handle(ctx, m); err != nil {
				return err
			}
			got <- m
			return nil
		})
	}()
	var m queue.Message
	select {
	case m = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing consumed from push.direct")
	}
	cancel()
	<-done
	var dm push.DirectMessage
	if err := json.Unmarshal(m.Value, &dm); err != nil {
		t.Fatal(err)
	}
	if string(m.Key) != "dev1" || m.Partition != queue.PartitionForKey([]byte("dev1"), lg.Partitions(queue.TopicDirect)) ||
		dm.ID != "h1" || dm.NotificationID != "n1" || dm.InstallationID != "dev1" || string(dm.Data) != `{"alert":"hi"}` || dm.Expires != msg.Expiration.UnixMilli() {
		t.Errorf("push.direct record key %s partition %d: %+v", m.Key, m.Partition, dm)
	}
	if c := r.cached(t, "dev1"); len(c) != 1 || c[0] != "h1" {
		t.Errorf("cached %v, want [h1]", c)
	}
	if tl := r.tally(t, "h1"); !tl.Equal(push.Tally{Sent: 1}) {
		t.Errorf("tally %+v, want sent 1", tl)
	}
}
