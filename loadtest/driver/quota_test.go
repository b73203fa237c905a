package driver

import (
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// TestDriverQuotaScenarios: the quota profile gives as many quota-fill devices as the day
// quota and QuotaDevices quota devices, all vivo with deviceProfile "quota", on their own
// channels; quota-fill expects each sent once, quota expects each deferred (vivo's 10070
// spent the day's quota: the targets wait for the reset), never accepted.
func TestDriverQuotaScenarios(t *testing.T) {
	spec := HybridSpec{RunID: "r1", Quota: &sim.QuotaProfile{Channel: push.ChannelVivo, Profile: "quota", DayQuota: 20}, QuotaDevices: 30, InvalidRate: 0.1, Seed: 7}
	h, err := NewHybrid(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.QuotaFill) != 20 || len(h.Quota) != 30 || len(h.Devices()) != 50 {
		t.Fatalf("%d fill, %d quota, %d devices; want 20, 30, 50", len(h.QuotaFill), len(h.Quota), len(h.Devices()))
	}
	seen := map[string]bool{}
	for _, d := range h.Devices() {
		b := d.Body("t")
		if b["vendor"] != push.ChannelVivo || b["deviceProfile"] != "quota" || seen[d.Token] || seen[d.IID] || sim.IsDeadToken(d.Token, 0.1, 7) {
			t.Fatalf("device %+v: body %v (duplicate or dead token?)", d, b)
		}
		seen[d.Token], seen[d.IID] = true, true
	}

	fill, err := buildQuotaScenario(ScenarioQuotaFill, h, 3*time.Second)
	if err != nil || fill.Expect.Targets() != 20 || len(fill.Expect.Alive) != 20 || !fill.Hybrid {
		t.Fatalf("quota-fill: %+v, %v", fill.Expect, err)
	}
	if ch := fill.Requests[0].Body["channels"].([]string); ch[0] != ChannelQuotaFill {
		t.Fatalf("quota-fill pushes to %v", ch)
	}
	q, err := buildQuotaScenario(ScenarioQuota, h, 3*time.Second)
	if err != nil || q.Expect.Targets() != 30 || len(q.Expect.Deferred) != 30 || len(q.Expect.Failed) != 0 || q.Expect.EndsAfter != 0 {
		t.Fatalf("quota: %+v, %v", q.Expect, err)
	}
	if b := q.Requests[0].Body; b["expiration_interval"] != int64(3) || b["channels"].([]string)[0] != ChannelQuota {
		t.Fatalf("quota push body %v", b)
	}
	if _, err := buildQuotaScenario(ScenarioQuota, &Hybrid{}, time.Second); err == nil || !strings.Contains(err.Error(), "--vivo-quota-profile") {
		t.Fatalf("without a quota profile: %v", err)
	}
}

// TestDriverVerifyFailed: expected failures verify when the records count them failed with
// the reason and no simulator accepted them; an accepted one, a missing reason, another
// error and a wrong tally are problems.
func TestDriverVerifyFailed(t *testing.T) {
	mk := func() (Expect, RecordCounts, []SimDelta) {
		e := Expect{Alive: map[string]string{}, Dead: map[string]string{},
			Failed: map[string]string{"q1": "vivo", "q2": "vivo"}, FailReason: "vivo 10070"}
		var rc RecordCounts
		rc.Add(push.StatusDone, map[string]push.Tally{"vivo": {Targets: 2, Failed: 2}},
			[]string{"vivo 10070 daily quota exceeded: the push expired while the vendor's daily quota was spent"})
		return e, rc, []SimDelta{{Name: "vivo", PerToken: map[string]int64{}}}
	}
	e, rc, sims := mk()
	if p := Verify(&e, rc, sims); len(p) != 0 {
		t.Fatalf("exact: %v", p)
	}
	e, rc, sims = mk()
	sims[0].PerToken["q1"], sims[0].Accepted = 1, 1
	if p := strings.Join(Verify(&e, rc, sims), "; "); !strings.Contains(p, "tokens accepted that must fail: 1") {
		t.Fatalf("accepted: %s", p)
	}
	e, rc, sims = mk()
	rc.Errors = []string{"vivo 10302 regId not found"}
	if p := strings.Join(Verify(&e, rc, sims), "; "); !strings.Contains(p, "push record reports: vivo 10302") || !strings.Contains(p, `no push record error names "vivo 10070"`) {
		t.Fatalf("other reason: %s", p)
	}
	e, rc, sims = mk()
	rc.ByChannel["vivo"] = push.Tally{Targets: 2, Failed: 1, Expired: 1}
	rc.Total = push.Tally{Targets: 2, Failed: 1, Expired: 1}
	if p := strings.Join(Verify(&e, rc, sims), "; "); !strings.Contains(p, "channel vivo: targets/sent/failed/expired/invalid = 2/0/1/1/0, want 2/0/2/0/0") {
		t.Fatalf("expired instead of failed: %s", p)
	}
}
