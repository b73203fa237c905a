package driver

import (
	"slices"
	"strings"
	"testing"
)

func TestDriverParseSims(t *testing.T) {
	got, err := ParseSims("apns=https://127.0.0.1:1/, https://127.0.0.1:2 ,")
	if err != nil {
		t.Fatal(err)
	}
	want := []Sim{{Name: "apns", URL: "https://127.0.0.1:1"}, {URL: "https://127.0.0.1:2"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := ParseSims("fcm=127.0.0.1:2"); err == nil {
		t.Fatal("a URL without scheme was accepted")
	}
}

func TestDriverParsePushes(t *testing.T) {
	f := func(in string, rate float64, want []string, wantErr bool) {
		t.Helper()
		got, err := ParsePushes(in, rate, 0)
		if (err != nil) != wantErr || !wantErr && !slices.Equal(got, want) {
			t.Fatalf("ParsePushes(%q, %v) = %v, %v; want %v (error %v)", in, rate, got, err, want, wantErr)
		}
	}
	f("", 0, []string{"channel", "where", "devices", "direct", "mixed", "quota"}, false)
	f("", 0.1, []string{"channel", "where", "devices", "invalid", "direct", "mixed", "quota"}, false)
	f("mixed,direct", 0, []string{"mixed", "direct"}, false)
	f("where, channel,where", 0, []string{"where", "channel"}, false)
	f("channel,bogus", 0, nil, true)
	f("channel,kill", 0, []string{"channel", "kill"}, false)
	if got, err := ParsePushes("", 0, 0.3); err != nil || !slices.Equal(got, []string{"kill"}) {
		t.Fatalf("ParsePushes with -kill-at = %v, %v; want [kill]", got, err)
	}
}

func TestDriverConfigValidate(t *testing.T) {
	c := Config{PushdURL: "http://127.0.0.1:1", AdminToken: "x", Sims: []Sim{{URL: "https://h:1"}}, SimDir: "/d",
		Pushes: []string{ScenarioChannel, ScenarioInvalid}}
	c = c.withDefaults()
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "invalid scenario needs -sim-invalid-rate") {
		t.Fatalf("got %v, want the invalid-rate error", err)
	}
	c.SimInvalidRate = 0.1
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Pushes = []string{ScenarioKill}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "kill scenario needs -kill-at") {
		t.Fatalf("got %v, want the kill-at error", err)
	}
	c.KillAt, c.PushdPIDFile = 0.3, "/run/pushd.pid"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.InvalidCohort != 2000 || c.Concurrency != 128 {
		t.Fatalf("defaults: cohort %d, concurrency %d", c.InvalidCohort, c.Concurrency)
	}
}

// The floor sends the compared push's APNs deliveries, at least 2,000 and, unless the flag says
// otherwise, at most 200,000: a 10,000,000-device push must not make it send ten million.
func TestDriverFloorRequests(t *testing.T) {
	for _, c := range []struct {
		flag int
		sent int64
		want int
	}{
		{0, 0, 2000},
		{0, 100_000, 100_000},
		{0, 10_000_000, 200_000},
		{5_000_000, 10_000_000, 5_000_000},
		{300, 100_000, 300},
	} {
		if got := floorRequests(c.flag, c.sent); got != c.want {
			t.Errorf("floorRequests(%d, %d) = %d, want %d", c.flag, c.sent, got, c.want)
		}
	}
}
