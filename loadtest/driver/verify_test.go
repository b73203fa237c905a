package driver

import (
	"strings"
	"testing"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// fixture: two iOS tokens (a1, a2) and one FCM token (f1) alive, one dead iOS token (d1).
func fixture() (Expect, RecordCounts, []SimDelta) {
	e := Expect{
		Alive: map[string]string{"a1": "apns", "a2": "apns", "f1": "fcm"},
		Dead:  map[string]string{"d1": "apns"},
	}
	var rc RecordCounts
	rc.Add(push.StatusDone, map[string]push.Tally{
		"apns": {Targets: 3, Sent: 2, InvalidTokens: 1},
		"fcm":  {Targets: 1, Sent: 1},
	}, nil)
	sims := []SimDelta{
		{Name: "apns", Accepted: 2, Dead: 1, PerToken: map[string]int64{"a1": 1, "a2": 1}},
		{Name: "fcm", Accepted: 1, PerToken: map[string]int64{"f1": 1}},
	}
	return e, rc, sims
}

func TestDriverVerify(t *testing.T) {
	cases := []struct {
		name   string
		change func(e *Expect, rc *RecordCounts, sims []SimDelta)
		want   []string // substrings of the problems, in order; none: verified
	}{
		{name: "exact", change: func(*Expect, *RecordCounts, []SimDelta) {}},
		{name: "missing token", change: func(_ *Expect, _ *RecordCounts, s []SimDelta) {
			delete(s[0].PerToken, "a2")
		}, want: []string{"never accepted by a simulator: 1 (e.g. a2)"}},
		{name: "duplicate", change: func(_ *Expect, _ *RecordCounts, s []SimDelta) {
			s[1].PerToken["f1"] = 2
		}, want: []string{"accepted more than once: 1 (e.g. f1)"}},
		{name: "extra token", change: func(_ *Expect, _ *RecordCounts, s []SimDelta) {
			s[1].PerToken["zz"] = 1
		}, want: []string{"does not target: 1 (e.g. zz)"}},
		{name: "dead token accepted", change: func(_ *Expect, _ *RecordCounts, s []SimDelta) {
			s[0].PerToken["d1"] = 1
		}, want: []string{"dead tokens accepted: 1 (e.g. d1)"}},
		{name: "wrong simulator", change: func(_ *Expect, _ *RecordCounts, s []SimDelta) {
			delete(s[0].PerToken, "a1")
			s[1].PerToken["a1"] = 1
		}, want: []string{"wrong simulator: 1 (e.g. a1)"}},
		{name: "unnamed simulators are checked merged", change: func(_ *Expect, _ *RecordCounts, s []SimDelta) {
			delete(s[0].PerToken, "a1")
			s[1].PerToken["a1"] = 1
			s[0].Name, s[1].Name = "", ""
		}},
		{name: "record not done", change: func(_ *Expect, rc *RecordCounts, _ []SimDelta) {
			rc.Status = push.StatusInProcess
		}, want: []string{`status is "in-process"`}},
		{name: "record errors", change: func(_ *Expect, rc *RecordCounts, _ []SimDelta) {
			rc.Errors = []string{"stopped: credentials rejected"}
		}, want: []string{"reports: stopped: credentials rejected"}},
		{name: "record counts a failure", change: func(_ *Expect, rc *RecordCounts, _ []SimDelta) {
			rc.Total.Failed++
			rc.ByChannel["fcm"] = push.Tally{Targets: 1, Sent: 1, Failed: 1}
		}, want: []string{"push records: targets/sent/failed/expired/invalid = 4/3/1/0/1, want 4/3/0/0/1",
			"channel fcm: targets/sent/failed/expired/invalid = 1/1/1/0/0, want 1/1/0/0/0"}},
		{name: "records and simulators disagree", change: func(_ *Expect, _ *RecordCounts, s []SimDelta) {
			s[0].Accepted = 3 // a retried 200 the per-token map does not show
			s[0].Dead = 0
		}, want: []string{"simulators accepted 4 pushes, push records count 3 sent",
			"simulators answered 0 dead tokens, push records count 1 invalid",
			"simulator apns accepted 3 pushes, push records count 2 sent on channel apns"}},
		{name: "at least once: duplicates are counted, not refused", change: func(e *Expect, _ *RecordCounts, s []SimDelta) {
			e.AtLeastOnce = true
			s[0].PerToken["a1"], s[0].Accepted = 3, 4
		}},
		{name: "at least once: a missing token is still refused", change: func(e *Expect, _ *RecordCounts, s []SimDelta) {
			e.AtLeastOnce = true
			s[0].PerToken["a1"], s[0].PerToken["a2"] = 2, 0
		}, want: []string{"never accepted by a simulator: 1 (e.g. a2)",
			"simulators accepted 3 pushes (1 of them duplicates), push records count 3 sent",
			"simulator apns accepted 2 pushes (1 of them duplicates), push records count 2 sent"}},
		{name: "at least once: records must count each target once", change: func(e *Expect, _ *RecordCounts, s []SimDelta) {
			e.AtLeastOnce = true
			s[0].PerToken["a1"], s[0].Accepted = 2, 4 // one accepted push the per-token counts do not show
		}, want: []string{"simulators accepted 5 pushes (1 of them duplicates), push records count 3 sent",
			"simulator apns accepted 4 pushes (1 of them duplicates), push records count 2 sent"}},
		{name: "unexpected channel in record", change: func(_ *Expect, rc *RecordCounts, _ []SimDelta) {
			rc.ByChannel["direct"] = push.Tally{}
		}, want: nil}, // an all-zero tally equals the (absent) expectation
		{name: "targets on an unexpected channel", change: func(_ *Expect, rc *RecordCounts, _ []SimDelta) {
			rc.ByChannel["direct"] = push.Tally{Targets: 1, Failed: 1}
			rc.Total.Add(push.Tally{Targets: 1, Failed: 1})
		}, want: []string{"push records: ", "channel direct: targets/sent/failed/expired/invalid = 1/0/1/0/0, want 0/0/0/0/0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, rc, sims := fixture()
			c.change(&e, &rc, sims)
			got := Verify(&e, rc, sims)
			if len(got) != len(c.want) {
				t.Fatalf("got problems %q, want %d matching %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Fatalf("problem %d is %q, want it to contain %q (all: %q)", i, got[i], w, got)
				}
			}
		})
	}
}

func TestDriverDuplicates(t *testing.T) {
	e := Expect{Alive: map[string]string{"a": "apns", "b": "apns", "f": "fcm"}, Dead: map[string]string{"d": "apns"}}
	sims := []SimDelta{
		{Name: "apns", PerToken: map[string]int64{"a": 3, "b": 1, "d": 2, "zz": 5}},
		{Name: "fcm", PerToken: map[string]int64{"f": 2, "b": 1}},
	}
	total, per := Duplicates(&e, sims)
	if total != 4 || per[0] != 2 || per[1] != 2 {
		t.Fatalf("got %d %v, want 4 [2 2] (dead and unknown tokens are not duplicates)", total, per)
	}
}

func TestDriverRecordCountsAdd(t *testing.T) {
	var rc RecordCounts
	rc.Add(push.StatusDone, map[string]push.Tally{"apns": {Targets: 2, Sent: 2}}, nil)
	rc.Add(push.StatusInProcess, map[string]push.Tally{"apns": {Targets: 3, Sent: 1}, "fcm": {Targets: 1}}, []string{"x"})
	rc.Add(push.StatusDone, nil, nil)
	if rc.Status != push.StatusInProcess {
		t.Fatalf("status %q, want the least advanced (in-process)", rc.Status)
	}
	if !rc.Total.Equal(push.Tally{Targets: 6, Sent: 3}) || !rc.ByChannel["apns"].Equal(push.Tally{Targets: 5, Sent: 3}) || len(rc.Errors) != 1 {
		t.Fatalf("got %+v", rc)
	}
}

func TestDriverSimDelta(t *testing.T) {
	before := sim.Stats{Accepted: 5, ByReason: map[string]int64{"Unregistered": 1}, PerToken: map[string]int64{"a": 2, "b": 3}}
	after := sim.Stats{Accepted: 9, ByReason: map[string]int64{"Unregistered": 3, "BadDeviceToken": 4}, PerToken: map[string]int64{"a": 2, "b": 4, "c": 3}}
	d := Delta("apns", before, after)
	if d.Name != "apns" || d.Accepted != 4 || d.Dead != 2 || len(d.PerToken) != 2 || d.PerToken["b"] != 1 || d.PerToken["c"] != 3 {
		t.Fatalf("got %+v", d)
	}
}
