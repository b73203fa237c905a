package e2e

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/loadtest/webhooksink"
	"github.com/pushd/pushd/push"
)

// fakeLedger is a device ledger: copies and acks by message id.
type fakeLedger struct {
	times map[string]int
	acked map[string]bool
}

func newFakeLedger() *fakeLedger {
	return &fakeLedger{times: map[string]int{}, acked: map[string]bool{}}
}

func (f *fakeLedger) Times(id string) int  { return f.times[id] }
func (f *fakeLedger) Acked(id string) bool { return f.acked[id] }

// TestFlapCheckFindsDifferences: the flapping scenario's one comparison of a record with the
// ledgers reports a lost device, a push shown twice, a count off on a channel and a webhook
// ledger that differs, and counts wire duplicates; an exact record gives no difference.
func TestFlapCheckFindsDifferences(t *testing.T) {
	ownL, hybL := newFakeLedger(), newFakeLedger()
	own, hyb, lost := &flapDevice{iid: "own", ledger: ownL}, &flapDevice{iid: "hyb", token: "tok", channel: push.ChannelHMS, ledger: hybL},
		&flapDevice{iid: "lost", ledger: newFakeLedger()}
	// "own" gets p1 twice on the wire and acks it; "hyb" gets it from HMS once.
	ownL.times["p1"], ownL.acked["p1"] = 2, true
	l := &flapLedgers{devs: []*flapDevice{own, hyb}, vendor: map[string]map[string]int64{"p1": {"tok": 1}}}
	rec := flapRecord{ObjectID: "p1"}
	rec.Counts.ByChannel = map[string]flapTally{
		push.ChannelDirect: {Targets: 1, Sent: 1, Arrivals: 1},
		push.ChannelHMS:    {Targets: 1, Sent: 1},
	}
	wh := webhooksink.Ledger{ByPush: map[string]map[string]int{"p1": {"sent": 2, "arrived": 1}}}
	diffs, dups := flapCheck(rec, l, wh)
	if len(diffs) != 0 || dups != 1 {
		t.Fatalf("exact record: differences %q, %d wire duplicates; want none and 1", diffs, dups)
	}

	hybL.times["p1"] = 1 // also on the own channel: shown twice
	l.devs = append(l.devs, lost)
	rec.Counts.ByChannel[push.ChannelHMS] = flapTally{Targets: 2, Sent: 1}
	wh.ByPush["p1"]["failed"] = 1
	diffs, _ = flapCheck(rec, l, wh)
	got := strings.Join(diffs, "\n")
	for _, want := range []string{"device lost: lost", "device hyb: shown twice", "channel " + push.ChannelHMS + ": record",
		"channel " + push.ChannelDirect + ": record", "webhook ledger"} {
		if !strings.Contains(got, want) {
			t.Errorf("differences %q do not mention %q", got, want)
		}
	}
}
