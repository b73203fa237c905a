package driver

import (
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
		{name: ScenarioDevices, calls: 1 + 2, alive: 300 + 700}, // devicesPerType 800: 300 iOS (1 call), 700 Android (2 calls)
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
			for _, r := range s.Requests {
				if ids, ok := r.Body["device_ids"].([]string); ok && (len(ids) == 0 || len(ids) > 500) {
					t.Fatalf("a devices call lists %d ids", len(ids))
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
