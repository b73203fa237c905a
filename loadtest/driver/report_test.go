package driver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleReport() *Report {
	return &Report{
		PushdURL: "http://127.0.0.1:1", AppID: "app1", Installations: 100, IOS: 50, Android: 50,
		InvalidCohort: 20, DeadTokens: 4, Concurrency: 8, Upserts: 120, UpsertSeconds: 2, UpsertsPerSecond: 60,
		Scenarios: []ScenarioReport{
			{Name: "channel", Records: []string{"r1"}, ExpectedTargets: 25, Targets: 25, Sent: 25, Seconds: 0.5,
				DeliveriesPerSecond: 50, Verification: VerdictOK},
			{Name: "invalid", Records: []string{"r2"}, ExpectedTargets: 20, Targets: 20, Sent: 16, Invalid: 4, Seconds: 1,
				DeliveriesPerSecond: 16, Verification: VerdictOK},
		},
	}
}

func TestDriverReportFinish(t *testing.T) {
	r := sampleReport()
	r.Finish()
	if !r.OK {
		t.Fatal("a report with every scenario OK is not OK")
	}
	r.Scenarios[1].Verification = VerdictFail
	r.Finish()
	if r.OK {
		t.Fatal("a report with a failed scenario is OK")
	}
	r = sampleReport()
	r.Error = "boom"
	r.Finish()
	if r.OK {
		t.Fatal("a report with a run error is OK")
	}
	r = &Report{}
	r.Finish()
	if r.OK {
		t.Fatal("a report without scenarios is OK")
	}
}

func TestDriverReportTable(t *testing.T) {
	r := sampleReport()
	r.Scenarios[1].Verification = VerdictFail
	r.Scenarios[1].Problems = []string{"tokens accepted more than once: 1"}
	r.Finish()
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"installations: 100 (50 iOS, 50 Android/FCM) + invalid-token cohort 20 (4 dead tokens)",
		"upserts: 120 in 2.00s = 60 upserts/s",
		"deliveries/s",
		"invalid: tokens accepted more than once: 1",
		"verification: FAIL",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("table lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	found := false
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 9 && f[0] == "channel" {
			found = true
			if f[2] != "25" || f[3] != "25" || f[6] != "0.50" || f[7] != "50" || f[8] != "OK" {
				t.Fatalf("channel row %q", l)
			}
		}
	}
	if !found {
		t.Fatalf("no channel row:\n%s", out)
	}
}

func TestDriverReportJSON(t *testing.T) {
	r := sampleReport()
	r.Finish()
	path := filepath.Join(t.TempDir(), "r.json")
	if err := r.WriteJSONFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"installations", "upsertsPerSecond", "scenarios", "ok"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("JSON report lacks %q: %s", k, b)
		}
	}
	sc := m["scenarios"].([]any)[1].(map[string]any)
	for _, k := range []string{"targets", "sent", "failed", "invalid", "seconds", "deliveriesPerSecond", "verification"} {
		if _, ok := sc[k]; !ok {
			t.Fatalf("scenario lacks %q: %v", k, sc)
		}
	}
}
