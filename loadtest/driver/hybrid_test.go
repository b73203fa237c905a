package driver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

func hybridSpec() HybridSpec {
	return HybridSpec{RunID: "r1", Direct: 100, Offline: 0.2, PerChannel: 10, Channels: MixedChannels, InvalidRate: 0.1, Seed: 7}
}

func TestDriverHybridPopulation(t *testing.T) {
	h, err := NewHybrid(hybridSpec())
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Direct) != 100 || len(h.Mixed) != 10*len(MixedChannels) {
		t.Fatalf("got %d direct, %d mixed; want 100, %d", len(h.Direct), len(h.Mixed), 10*len(MixedChannels))
	}
	// Own channel: half on each protocol, 20% offline spread over both protocols.
	count := func(devs []Device) (lc, off, offLC int) {
		for _, d := range devs {
			if d.Gateway() != push.ChannelDirect {
				continue
			}
			if d.Token != d.IID || d.IID == "" {
				t.Fatalf("own-channel device %+v: its token must be its installation id", d)
			}
			if d.Proto == ProtoLC {
				lc++
			} else if d.Proto != ProtoOurs {
				t.Fatalf("own-channel device %d has protocol %q", d.Index, d.Proto)
			}
			if d.Offline {
				off++
				if d.Proto == ProtoLC {
					offLC++
				}
			}
		}
		return lc, off, offLC
	}
	if lc, off, offLC := count(h.Direct); lc != 50 || off != 20 || offLC != 10 {
		t.Fatalf("direct: %d on lc, %d offline (%d of them lc); want 50, 20, 10", lc, off, offLC)
	}
	if lc, off, _ := count(h.Mixed); lc != 5 || off != 2 {
		t.Fatalf("mixed own channel: %d on lc, %d offline; want 5, 2", lc, off)
	}
	seen := map[string]bool{}
	per := map[string]int{}
	for _, d := range slices.Concat(h.Direct, h.Mixed) {
		if seen[d.Token] || seen["iid:"+d.IID] && d.IID != "" {
			t.Fatalf("token or installation id of %+v generated twice", d)
		}
		seen[d.Token], seen["iid:"+d.IID] = true, true
		if sim.IsDeadToken(d.Token, 0.1, 7) && d.Gateway() != push.ChannelDirect {
			t.Fatalf("device %+v has a token the simulators answer as dead", d)
		}
		if slices.Contains(d.Channels, ChannelMixed) {
			per[d.Gateway()]++
		}
		b := d.Body("com.example")
		switch gw := d.Gateway(); gw {
		case push.ChannelAPNs:
			if b["deviceType"] != push.DeviceIOS || b["deviceToken"] != d.Token {
				t.Fatalf("apns device body %v", b)
			}
		case push.ChannelDirect:
			if b["deviceType"] != push.DeviceAndroid || b["installationId"] != d.IID || b["vendor"] != nil || b["registrationId"] != nil {
				t.Fatalf("own-channel device body %v: want an Android installation without vendor", b)
			}
		default:
			if b["vendor"] != gw || b["registrationId"] != d.Token || b["installationId"] != d.IID {
				t.Fatalf("%s device body %v", gw, b)
			}
		}
	}
	for _, ch := range MixedChannels {
		if per[ch] != 10 {
			t.Fatalf("mixed scenario: %d devices on %s, want 10 (all: %v)", per[ch], ch, per)
		}
	}
	if _, err := NewHybrid(HybridSpec{RunID: "r", Direct: 1, Offline: 1}); err == nil {
		t.Fatal("an offline share of 1 was accepted")
	}
}

func TestDriverHybridScenarios(t *testing.T) {
	h, err := NewHybrid(hybridSpec())
	if err != nil {
		t.Fatal(err)
	}
	s, err := BuildHybridScenario(ScenarioDirect, h)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Hybrid || len(s.Own) != 100 || s.Expect.Targets() != 100 || len(s.Requests) != 1 {
		t.Fatalf("direct: hybrid %v, %d own, %d targets, %d calls", s.Hybrid, len(s.Own), s.Expect.Targets(), len(s.Requests))
	}
	want := push.Tally{Targets: 100, Sent: 100, Arrivals: 100}
	if got := s.Expect.byGateway(); len(got) != 1 || !got[push.ChannelDirect].Equal(want) {
		t.Fatalf("direct expects %v, want only direct %v", got, want)
	}
	m, err := BuildHybridScenario(ScenarioMixed, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Own) != 10 || m.Expect.Targets() != 10*len(MixedChannels) || !slices.Equal(m.Requests[0].Body["channels"].([]string), []string{ChannelMixed}) {
		t.Fatalf("mixed: %d own, %d targets, body %v", len(m.Own), m.Expect.Targets(), m.Requests[0].Body)
	}
	for ch, tl := range m.Expect.byGateway() {
		if tl.Targets != 10 || tl.Sent != 10 || tl.Arrivals != map[bool]int64{true: 10}[ch == push.ChannelDirect] {
			t.Fatalf("mixed expects %v on %s", tl, ch)
		}
	}
	if _, err := BuildHybridScenario(ScenarioMixed, &Hybrid{}); err == nil {
		t.Fatal("a mixed scenario without devices was built")
	}
	if !IsHybrid(ScenarioDirect) || !IsHybrid(ScenarioMixed) || IsHybrid(ScenarioChannel) {
		t.Fatal("IsHybrid is wrong")
	}
}

// fakeLedger is a device ledger as the checks read it.
type fakeLedger struct {
	ids   []string
	times map[string]int
	acked map[string]bool
	data  map[string]json.RawMessage
}

func (f *fakeLedger) IDs() []string                  { return f.ids }
func (f *fakeLedger) Times(id string) int            { return f.times[id] }
func (f *fakeLedger) Acked(id string) bool           { return f.acked[id] }
func (f *fakeLedger) Data(id string) json.RawMessage { return f.data[id] }

func got(alert string, msgs ...string) *fakeLedger {
	l := &fakeLedger{times: map[string]int{}, acked: map[string]bool{}, data: map[string]json.RawMessage{}}
	for _, m := range msgs {
		id, flags, _ := strings.Cut(m, "/")
		if l.times[id] == 0 {
			l.ids = append(l.ids, id)
		}
		l.times[id]++
		l.acked[id] = !strings.Contains(flags, "noack")
		l.data[id] = json.RawMessage(`{"alert":"` + alert + `"}`)
	}
	return l
}

func TestDriverOwnChecks(t *testing.T) {
	const alert = "pushd load test: direct"
	devs := []*Device{{IID: "a", Token: "a"}, {IID: "b", Token: "b"}, {IID: "c", Token: "c"}, {IID: "d", Token: "d"}, {IID: "e", Token: "e"}, {IID: "f", Token: "f"}}
	ledgers := map[string]ledgerView{
		"a": got(alert, "m1"),          // fine
		"b": got(alert, "m2", "m2"),    // the same message twice
		"c": got(alert, "m3", "m4"),    // two messages
		"d": got(alert, "m5/noack"),    // never acked
		"e": got("another push", "m6"), // another payload
		"f": got(alert),                // nothing: Verify's to report
	}
	view := func(iid string) ledgerView { return ledgers[iid] }
	probs := checkOwn(devs, view, alert)
	for i, want := range []string{
		"more than one message: 1 (e.g. c)",
		"a message more than once: 1 (e.g. b)",
		"did not ack: 1 (e.g. d)",
		"another payload: 1 (e.g. e)",
	} {
		if i >= len(probs) || !strings.Contains(probs[i], want) {
			t.Fatalf("problem %d: want %q in %q", i, want, probs)
		}
	}
	if len(probs) != 4 {
		t.Fatalf("got %d problems, want 4: %q", len(probs), probs)
	}
	if p := checkOwn(devs[:1], view, alert); len(p) != 0 {
		t.Fatalf("a device that got its message once and acked it: %q", p)
	}

	// The receipts count like a simulator's: Verify then flags the duplicate and the device
	// that got nothing, and the records' sent against what the devices received.
	d := ownDelta(devs, view)
	if d.Name != push.ChannelDirect || d.Accepted != 7 || d.PerToken["b"] != 2 || d.PerToken["c"] != 2 || d.PerToken["f"] != 0 {
		t.Fatalf("delta %+v", d)
	}
	e := newExpect()
	for _, dev := range devs {
		e.Alive[dev.Token] = push.ChannelDirect
	}
	var rc RecordCounts
	rc.Add(push.StatusDone, map[string]push.Tally{push.ChannelDirect: {Targets: 6, Sent: 6, Arrivals: 6}}, nil)
	vp := strings.Join(Verify(&e, rc, []SimDelta{d}), "\n")
	for _, want := range []string{"never accepted by a simulator: 1 (e.g. f)", "accepted more than once: 2", "simulator direct accepted 7 pushes, push records count 6 sent"} {
		if !strings.Contains(vp, want) {
			t.Fatalf("Verify: want %q in\n%s", want, vp)
		}
	}
	rc = RecordCounts{}
	rc.Add(push.StatusDone, map[string]push.Tally{push.ChannelDirect: {Targets: 6, Sent: 6, Arrivals: 5}}, nil)
	if vp := strings.Join(Verify(&e, rc, nil), "\n"); !strings.Contains(vp, "arrivals = 6/6/0/0/0/5, want 6/6/0/0/0/6") {
		t.Fatalf("Verify of a missing arrival:\n%s", vp)
	}
}

func TestDriverOwnRecords(t *testing.T) {
	rec := func(arrivals, lc, directArrivals int64) record {
		var r record
		r.Arrivals, r.LCSuccesses = arrivals, lc
		r.Counts.ByChannel = map[string]push.Tally{push.ChannelDirect: {Arrivals: directArrivals}}
		return r
	}
	if a, l, p := checkOwnRecords([]record{rec(3, 3, 3), rec(2, 2, 2)}, 5); a != 5 || l != 5 || len(p) != 0 {
		t.Fatalf("exact records: %d arrivals, %d lcSuccesses, %q", a, l, p)
	}
	_, _, p := checkOwnRecords([]record{rec(4, 5, 3)}, 5)
	all := strings.Join(p, "\n")
	for _, want := range []string{"4 arrivals, want 5", "3 arrivals on channel direct, 4 in all"} {
		if !strings.Contains(all, want) {
			t.Fatalf("want %q in\n%s", want, all)
		}
	}
	if strings.Contains(all, "lcSuccesses") {
		t.Fatalf("lcSuccesses reported although exact:\n%s", all)
	}
	if _, _, p := checkOwnRecords([]record{rec(5, 4, 5)}, 5); len(p) != 1 || !strings.Contains(p[0], "lcSuccesses 4, want 5") {
		t.Fatalf("missing lcSuccesses: %q", p)
	}
}

func TestDriverReportChannels(t *testing.T) {
	r := &Report{HybridAppID: "h1", OwnChannel: 10, Mixed: 70, Scenarios: []ScenarioReport{{
		Name: ScenarioMixed, Verification: VerdictOK, OwnDevices: 10, OwnLC: 5, OwnOffline: 2, Arrivals: 10, LCSuccesses: 10,
		ByChannel: map[string]push.Tally{push.ChannelAPNs: {Targets: 10, Sent: 10}, push.ChannelDirect: {Targets: 10, Sent: 10, Arrivals: 10}},
	}}}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hybrid app h1 (china edition)", "mixed: channel direct 10 targets, 10 sent, 0 failed, 0 invalid, 10 arrivals",
		"mixed: channel apns   10 targets", "10 devices (5 on lc.protobuf2.1, 2 offline", "lcSuccesses 10, arrivals 10"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("want %q in\n%s", want, b.String())
		}
	}
}
