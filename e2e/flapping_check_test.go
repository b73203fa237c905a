package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/pushd/pushd/loadtest/webhooksink"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// fakeLedger is a device ledger: copies, acks and notification ids by message id.
type fakeLedger struct {
	times map[string]int
	acked map[string]bool
	nids  map[string]string
}

func newFakeLedger() *fakeLedger {
	return &fakeLedger{times: map[string]int{}, acked: map[string]bool{}, nids: map[string]string{}}
}

func (f *fakeLedger) Times(id string) int  { return f.times[id] }
func (f *fakeLedger) Acked(id string) bool { return f.acked[id] }
func (f *fakeLedger) NID(id string) string { return f.nids[id] }

// flapCase is the truth of TestFlapCheckFindsDifferences: push p1 of notification id n1 to
// "own" (own channel only: two frames, acked), "hyb" (HMS: one copy with n1's notify id) and
// "both" (Meizu: an own-channel frame, not acked, and a Meizu copy whose notifyKey is n1's —
// one notification on the device, one wire duplicate), with the exact record and webhook
// ledger of it.
func flapCase() (flapRecord, *flapLedgers, webhooksink.Ledger, map[string]*fakeLedger) {
	const oid, nid = "p1", "n1"
	led := map[string]*fakeLedger{"own": newFakeLedger(), "hyb": newFakeLedger(), "both": newFakeLedger(), "lost": newFakeLedger()}
	led["own"].times[oid], led["own"].acked[oid], led["own"].nids[oid] = 2, true, nid
	led["both"].times[oid], led["both"].nids[oid] = 1, nid
	l := &flapLedgers{
		devs: []*flapDevice{
			{iid: "own", ledger: led["own"]},
			{iid: "hyb", token: "tok-hms", channel: push.ChannelHMS, ledger: led["hyb"]},
			{iid: "both", token: "tok-mz", channel: push.ChannelMz, ledger: led["both"]},
		},
		vendor: map[string]map[string][]string{oid: {
			"tok-hms": {strconv.FormatInt(vendor.NotifyID(nid), 10)},
			"tok-mz":  {vendor.NotifyKey(nid)},
		}},
	}
	rec := flapRecord{ObjectID: oid, NotificationID: nid, Status: push.StatusDone}
	rec.Counts.ByChannel = map[string]push.Funnel{
		push.ChannelDirect: {Targets: 2, Sent: 2, Arrived: 1, Arrivals: 1},
		push.ChannelHMS:    {Targets: 1, Sent: 1},
		push.ChannelMz:     {Targets: 1, Sent: 1},
	}
	wh := webhooksink.Ledger{ByPush: map[string]map[string]int{oid: {"sent": 4, "arrived": 1}}}
	return rec, l, wh, led
}

// TestFlapCheckFindsDifferences: the flapping scenario's one comparison of a record with the
// ledgers joins a device's copies by notification id (own channel nid, the vendors' notify id
// mapped back through vendor.NotifyID) and counts the extra copies of one notification as wire
// duplicates; an exact record gives no difference, and each way a record or a ledger can be
// wrong is reported: a lost device, a push shown as two notifications, a funnel that does not
// add up, failedBy not summing to failed, pending left once done, arrived other than the acked
// deliveries, a deferred target the ledgers do not know, and a webhook ledger that differs.
func TestFlapCheckFindsDifferences(t *testing.T) {
	rec, l, wh, _ := flapCase()
	diffs, dups := flapCheck(rec, l, wh)
	if len(diffs) != 0 || dups != 2 {
		t.Fatalf("exact record: differences %q, %d wire duplicates; want none and 2 (own's second frame, both's Meizu copy)", diffs, dups)
	}
	// Pending targets of a push still in process are no difference of their own.
	rec.Status = push.StatusInProcess
	rec.Counts.ByChannel[push.ChannelHMS] = push.Funnel{Targets: 2, Sent: 1, Pending: 1}
	rec.Pending = 1
	if diffs, _ := flapCheck(rec, l, wh); strings.Contains(strings.Join(diffs, "\n"), "pending") {
		t.Errorf("a push in process with a pending target: differences %q mention pending", diffs)
	}

	for _, tc := range []struct {
		name   string
		change func(rec *flapRecord, l *flapLedgers, wh webhooksink.Ledger, led map[string]*fakeLedger)
		want   string
	}{
		{"a device no channel reached", func(_ *flapRecord, l *flapLedgers, _ webhooksink.Ledger, led map[string]*fakeLedger) {
			l.devs = append(l.devs, &flapDevice{iid: "lost", ledger: led["lost"]})
		}, "device lost: lost"},
		{"a vendor copy with another push's notify id", func(_ *flapRecord, l *flapLedgers, _ webhooksink.Ledger, _ map[string]*fakeLedger) {
			l.vendor["p1"]["tok-mz"] = []string{vendor.NotifyKey("n2")}
		}, "device both: shown twice"},
		{"a vendor copy without a notify id", func(_ *flapRecord, l *flapLedgers, _ webhooksink.Ledger, _ map[string]*fakeLedger) {
			l.vendor["p1"]["tok-mz"] = []string{""}
		}, "device both: shown twice"},
		{"Meizu's notify id in decimal, not its notifyKey", func(_ *flapRecord, l *flapLedgers, _ webhooksink.Ledger, _ map[string]*fakeLedger) {
			l.vendor["p1"]["tok-mz"] = []string{strconv.FormatInt(vendor.NotifyID("n1"), 10)}
		}, "device both: shown twice"},
		{"an own-channel frame without its nid", func(_ *flapRecord, _ *flapLedgers, _ webhooksink.Ledger, led map[string]*fakeLedger) {
			led["both"].nids["p1"] = ""
		}, "device both: shown twice"},
		{"a funnel that does not add up", func(rec *flapRecord, _ *flapLedgers, _ webhooksink.Ledger, _ map[string]*fakeLedger) {
			rec.Counts.ByChannel[push.ChannelHMS] = push.Funnel{Targets: 2, Sent: 1}
		}, "channel " + push.ChannelHMS + ": funnel targets 2, sent+failed+expired+deferred+pending 1"},
		{"failedBy not summing to failed", func(rec *flapRecord, _ *flapLedgers, wh webhooksink.Ledger, _ map[string]*fakeLedger) {
			rec.Counts.ByChannel[push.ChannelHMS] = push.Funnel{Targets: 2, Sent: 1, Failed: 1, FailedBy: map[string]int64{"rejected": 2}}
			wh.ByPush["p1"]["failed"] = 1
		}, "channel " + push.ChannelHMS + ": failedBy map[rejected:2] sums to 2, failed 1"},
		{"pending left once done", func(rec *flapRecord, _ *flapLedgers, _ webhooksink.Ledger, _ map[string]*fakeLedger) {
			rec.Counts.ByChannel[push.ChannelHMS] = push.Funnel{Targets: 2, Sent: 1, Pending: 1}
			rec.Pending = 1
		}, "channel " + push.ChannelHMS + ": done with 1 pending"},
		{"the record's pending other than its channels'", func(rec *flapRecord, _ *flapLedgers, _ webhooksink.Ledger, _ map[string]*fakeLedger) {
			rec.Pending = 1
		}, "push p1: pending 1, its channels' 0"},
		{"arrived other than the acked deliveries", func(rec *flapRecord, _ *flapLedgers, wh webhooksink.Ledger, _ map[string]*fakeLedger) {
			rec.Counts.ByChannel[push.ChannelDirect] = push.Funnel{Targets: 2, Sent: 2, Arrived: 2, Arrivals: 2}
			wh.ByPush["p1"]["arrived"] = 2
		}, "push p1: arrived 2 on the own channel, 1 acked in the device ledgers"},
		{"a deferred target no ledger knows", func(rec *flapRecord, _ *flapLedgers, _ webhooksink.Ledger, _ map[string]*fakeLedger) {
			rec.Counts.ByChannel[push.ChannelHMS] = push.Funnel{Targets: 2, Sent: 1, Deferred: 1}
		}, "channel " + push.ChannelHMS + ": record"},
		{"a count off on a channel", func(rec *flapRecord, _ *flapLedgers, wh webhooksink.Ledger, _ map[string]*fakeLedger) {
			rec.Counts.ByChannel[push.ChannelMz] = push.Funnel{Targets: 2, Sent: 2}
			wh.ByPush["p1"]["sent"] = 5
		}, "channel " + push.ChannelMz + ": record"},
		{"a channel the record lacks", func(rec *flapRecord, _ *flapLedgers, wh webhooksink.Ledger, _ map[string]*fakeLedger) {
			delete(rec.Counts.ByChannel, push.ChannelMz)
			wh.ByPush["p1"]["sent"] = 3
		}, "channel " + push.ChannelMz + ": not in the record"},
		{"a webhook ledger that differs", func(_ *flapRecord, _ *flapLedgers, wh webhooksink.Ledger, _ map[string]*fakeLedger) {
			wh.ByPush["p1"]["expired"] = 1
		}, "push p1: webhook ledger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, l, wh, led := flapCase()
			tc.change(&rec, l, wh, led)
			diffs, _ := flapCheck(rec, l, wh)
			if got := strings.Join(diffs, "\n"); !strings.Contains(got, tc.want) {
				t.Errorf("differences %q do not mention %q", got, tc.want)
			}
		})
	}
}
