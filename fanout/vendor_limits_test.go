package fanout

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// TestFanoutVendorLimitFailsItsTargets: a query push whose custom data is over vivo's limit
// fails the vivo targets with the reason in the record and sends the others.
func TestFanoutVendorLimitFailsItsTargets(t *testing.T) {
	e := newEnv(t)
	e.createApp(4, nil)
	now := time.Now()
	insts := []push.Installation{editionInst(0, "vivo", now), editionInst(1, "mi", now), editionInst(2, "mz", now), editionInst(3, "vivo", now)}
	if err := e.st.SeedInstallations(testApp, 4, insts); err != nil {
		t.Fatal(err)
	}
	snd := newRecSender()
	snd.keep = true
	e.start(DefaultWorkerConfig(), snd, 1)
	data := json.RawMessage(`{"alert":"hi","k":"` + strings.Repeat("x", 1500) + `"}`)
	rec := e.waitDone(e.submit(push.Job{Data: data}).NotificationObjectID)
	checkCounts(t, rec.Counts, push.Counts{
		push.ChannelVivo: {Targets: 2, Failed: 2, FailedBy: map[string]int64{push.FailPayload: 2}},
		push.ChannelMi:   {Targets: 1, Sent: 1},
		push.ChannelMz:   {Targets: 1, Sent: 1},
	})
	if len(rec.Errors) != 1 || !strings.Contains(rec.Errors[0], "over vivo's limit of 1024") {
		t.Errorf("record errors %q, want vivo's limit", rec.Errors)
	}
	for _, d := range snd.ds {
		if d.Target.Channel == push.ChannelVivo {
			t.Errorf("vivo target %s reached the sender", d.Target.ObjectID)
		}
	}
}
