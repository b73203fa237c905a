package driver

import (
	"slices"
	"testing"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

func testSpec() PopulationSpec {
	return PopulationSpec{RunID: "r1", N: 1000, IOSFraction: 0.3, Cohort: 200, DeadFraction: 0.25, InvalidRate: 0.1, Seed: 7}
}

func TestDriverPopulationShape(t *testing.T) {
	spec := testSpec()
	p, err := NewPopulation(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Main) != 1000 || len(p.Doomed) != 200 {
		t.Fatalf("got %d main, %d doomed; want 1000, 200", len(p.Main), len(p.Doomed))
	}
	seen := map[string]bool{}
	ios := 0
	for _, d := range append(slices.Clone(p.Main), p.Doomed...) {
		if seen[d.Token] {
			t.Fatalf("token %s generated twice", d.Token)
		}
		seen[d.Token] = true
		if sim.IsDeadToken(d.Token, spec.InvalidRate, spec.Seed) != d.Dead {
			t.Fatalf("device %d: Dead=%v but the simulator says %v", d.Index, d.Dead, !d.Dead)
		}
		if d.IOS && (len(d.Token) != 64 || d.IID != "") || !d.IOS && d.IID == "" {
			t.Fatalf("device %+v: wrong ids for its type", d)
		}
	}
	for _, d := range p.Main {
		if d.Dead {
			t.Fatalf("main device %d has a dead token", d.Index)
		}
		if d.IOS {
			ios++
		}
	}
	if ios != 300 {
		t.Fatalf("got %d iOS main devices, want 300", ios)
	}
	dead, deadIOS := 0, 0
	for _, d := range p.Doomed {
		if d.Dead {
			dead++
			if d.IOS {
				deadIOS++
			}
		}
	}
	if dead != 50 || deadIOS == 0 || deadIOS == dead {
		t.Fatalf("got %d dead (%d iOS) in the cohort, want 50 over both types", dead, deadIOS)
	}

	again, err := NewPopulation(spec)
	if err != nil {
		t.Fatal(err)
	}
	if again.Main[17].Token != p.Main[17].Token || again.Doomed[3].Token != p.Doomed[3].Token {
		t.Fatal("the same spec gave different tokens")
	}
}

func TestDriverPopulationNeedsRateForCohort(t *testing.T) {
	spec := testSpec()
	spec.InvalidRate = 0
	if _, err := NewPopulation(spec); err == nil {
		t.Fatal("a cohort with no invalid rate was generated")
	}
	spec.Cohort = 0
	if _, err := NewPopulation(spec); err != nil {
		t.Fatalf("no cohort, no rate: %v", err)
	}
}

func TestDriverDeviceBody(t *testing.T) {
	p, err := NewPopulation(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	ios := p.Main[0].Body("com.x")
	if ios["deviceType"] != push.DeviceIOS || ios["deviceToken"] != p.Main[0].Token || ios["apnsTopic"] != "com.x" || ios["ltGroup"] != 0 {
		t.Fatalf("iOS body %v", ios)
	}
	a := &p.Main[999]
	and := a.Body("com.x")
	if and["deviceType"] != push.DeviceAndroid || and["vendor"] != "fcm" || and["registrationId"] != a.Token || and["installationId"] != a.IID {
		t.Fatalf("Android body %v", and)
	}
	if _, ok := p.Doomed[0].Body("t")["ltGroup"]; ok {
		t.Fatal("a cohort device carries ltGroup: the where scenario would target it")
	}
}
