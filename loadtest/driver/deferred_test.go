package driver

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestDriverVerifyDeferred: expected deferred targets verify when the records count them
// deferred on their vendor and no simulator accepted them; an accepted one and a record that
// counts them failed instead are problems.
func TestDriverVerifyDeferred(t *testing.T) {
	mk := func() (Expect, RecordCounts, []SimDelta) {
		e := newExpect()
		e.Deferred["q1"], e.Deferred["q2"] = "vivo", "vivo"
		var rc RecordCounts
		rc.Add(push.StatusDone, map[string]push.Tally{"vivo": {Targets: 2, Deferred: 2}}, nil)
		return e, rc, []SimDelta{{Name: "vivo", PerToken: map[string]int64{}}}
	}
	e, rc, sims := mk()
	if p := Verify(&e, rc, sims); len(p) != 0 {
		t.Fatalf("exact: %v", p)
	}
	e, rc, sims = mk()
	sims[0].PerToken["q1"], sims[0].Accepted = 1, 1
	if p := strings.Join(Verify(&e, rc, sims), "; "); !strings.Contains(p, "tokens accepted that must wait for the quota reset: 1") {
		t.Fatalf("accepted: %s", p)
	}
	e, rc, sims = mk()
	rc.ByChannel["vivo"] = push.Tally{Targets: 2, Failed: 2}
	rc.Total = push.Tally{Targets: 2, Failed: 2}
	if p := strings.Join(Verify(&e, rc, sims), "; "); !strings.Contains(p, "channel vivo: targets/sent/failed/expired/invalid/deferred = 2/0/2/0/0/0, want 2/0/0/0/0/2") {
		t.Fatalf("failed instead of deferred: %s", p)
	}
}
