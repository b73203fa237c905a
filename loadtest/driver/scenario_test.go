package driver

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

func TestDriverScenarioTargets(t *testing.T) {
	p, err := NewPopulation(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Doomed {
		p.Doomed[i].ObjectID = "oid" + p.Doomed[i].Token[:6]
	}
	cases := []struct {
		name        string
		calls       int
		alive, dead int
		gone        int
		aliveIf     func(d *Device) bool // over the main population
	}{
		{name: ScenarioChannel, calls: 1, alive: 250, aliveIf: func(d *Device) bool { return d.Index%4 == 0 }},
		{name: ScenarioWhere, calls: 1, alive: 300, aliveIf: func(d *Device) bool { return d.Index%10 < 3 }},
		// devicesPerType 800: 300 iOS tokens in 1 call; 700 FCM tokens in 2 (500 ids a call).
		{name: ScenarioDevices, calls: 1 + 2, alive: 300 + 700},
		{name: ScenarioInvalid, calls: 1, alive: 150, dead: 50, gone: 50},
		{name: ScenarioInvalidAgain, calls: 1, alive: 150},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := BuildScenario(c.name, p, 800)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Requests) != c.calls || len(s.Expect.Alive) != c.alive || len(s.Expect.Dead) != c.dead || len(s.Gone) != c.gone {
				t.Fatalf("got %d calls, %d alive, %d dead, %d gone; want %d, %d, %d, %d",
					len(s.Requests), len(s.Expect.Alive), len(s.Expect.Dead), len(s.Gone), c.calls, c.alive, c.dead, c.gone)
			}
			if c.aliveIf != nil {
				for i := range p.Main {
					d := &p.Main[i]
					if _, ok := s.Expect.Alive[d.Token]; ok != c.aliveIf(d) {
						t.Fatalf("device %d: expected=%v", d.Index, ok)
					}
				}
			}
			for i, r := range s.Requests {
				if ids, ok := r.Body["device_ids"].([]string); ok && (len(ids) == 0 || len(ids) > 500) {
					t.Fatalf("a devices call lists %d ids", len(ids))
				}
				withReq := maps.Clone(r.Body)
				withReq["req_id"] = fmt.Sprintf("%s%02d%03d", "0123abcd", 99, i)
				delete(withReq, "device_ids") // outside the 4096-byte rule of /1.1/push/devices
				if b, _ := json.Marshal(withReq); len(b) >= 4096 {
					t.Fatalf("call %d has a body of %d bytes without its device_ids, want below 4096", i, len(b))
				}
			}
			for tok, gw := range s.Expect.Alive {
				if (len(tok) == 64) != (gw == push.ChannelAPNs) {
					t.Fatalf("token %s expected at %s", tok, gw)
				}
			}
		})
	}
}

func TestDriverScenarioInvalidNeedsCohort(t *testing.T) {
	spec := testSpec()
	spec.Cohort = 0
	p, err := NewPopulation(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := BuildScenario(ScenarioInvalid, p, 10); err == nil {
		t.Fatal("invalid scenario built without a cohort")
	}
	if _, err := BuildScenario("nope", p, 10); err == nil {
		t.Fatal("unknown scenario built")
	}
}

func TestDriverScenarioChunks(t *testing.T) {
	ids := make([]string, 1200)
	for i := range ids {
		ids[i] = fmt.Sprintf("%064x", i) // iOS tokens: 500 of them fit one call
	}
	cs, err := chunks(map[string]any{"device_type": "ios"}, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 || len(cs[0]) != 500 || len(cs[2]) != 200 {
		t.Fatalf("tokens: got %d chunks, want 500+500+200", len(cs))
	}
	if _, err := chunks(map[string]any{}, []string{strings.Repeat("a", 201)}); err == nil {
		t.Fatal("an id longer than 200 characters was chunked")
	}
	if _, err := chunks(map[string]any{"data": strings.Repeat("x", 4096)}, ids); err == nil {
		t.Fatal("a body of 4096 bytes without its ids was chunked")
	}
}
