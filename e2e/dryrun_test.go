package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/pushd/pushd/push"
)

var (
	apnsSimURL = regexp.MustCompile(`APNs (https://127\.0\.0\.1:\d+) `)
	fcmSimURL  = regexp.MustCompile(`FCM (https://127\.0\.0\.1:\d+),`)
)

// dryRunAnswer is the part of a dry run's answer the test reads.
type dryRunAnswer struct {
	DryRun    bool             `json:"dryRun"`
	Devices   int64            `json:"devices"`
	ByChannel map[string]int64 `json:"byChannel"`
	Payloads  map[string]struct {
		Payload json.RawMessage `json:"payload"`
		Error   string          `json:"error"`
	} `json:"payloads"`
}

// A dry run of a push through the real binary (`pushd serve --dev --sim`, what `make run`
// starts) counts, per delivery channel, exactly the devices the real push to the same query
// then reaches (iOS, the own channel, HMS, Honor, Xiaomi and Meizu installations, an invalid one and one
// outside the channel among them; the dev app is of the China edition, which has no FCM), and leaves nothing behind: no push record, nothing sent to
// any gateway simulator, and its req_id unclaimed.
func TestE2EDryRunCountsWhatThePushReaches(t *testing.T) {
	data := t.TempDir()
	d := startDevSim(t, data)
	p, c := d.pushd, d.c
	sims := d.sims(t, push.ChannelAPNs, push.ChannelFCM, push.ChannelHMS, push.ChannelMi, push.ChannelMz, push.ChannelHonor)
	deals := []string{"deals"}
	for _, inst := range []map[string]any{
		{"deviceType": "ios", "deviceToken": "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f1", "apnsTopic": "com.example.pushd", "channels": deals},
		{"deviceType": "ios", "deviceToken": "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f2", "apnsTopic": "com.example.pushd", "channels": deals},
		{"deviceType": "ios", "deviceToken": "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f3", "apnsTopic": "com.example.pushd", "channels": []string{"other"}},
		{"deviceType": "ios", "deviceToken": "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f4", "apnsTopic": "com.example.pushd", "channels": deals, "valid": false},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000001", "vendor": "meizu", "registrationId": "RFAKEmzDryRunA", "channels": deals},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000002", "channels": deals},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000003", "channels": deals},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000004", "vendor": "HMS", "registrationId": "IQAAAACy0dryrunA", "channels": deals},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000005", "vendor": "mi", "registrationId": "fakeMiRegIdD", "channels": deals},
		{"deviceType": "android", "installationId": "b0b0b0b0-0000-4000-8000-000000000006", "vendor": "honor", "registrationId": "AQAAAACy0honorDryRun", "channels": deals},
	} {
		status, body, err := c.call("POST", "/1.1/installations", false, inst)
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create installation: %d %s: %v", status, body, err)
		}
	}
	body := map[string]any{"data": map[string]any{"alert": "Half price today", "title": "Deals"}, "channels": deals, "req_id": "dry1", "dry_run": true}
	status, out, err := c.call("POST", "/1.1/push", true, body)
	if err != nil || status != http.StatusOK {
		t.Fatalf("dry run: %d %s: %v", status, out, err)
	}
	var dry dryRunAnswer
	if err := json.Unmarshal(out, &dry); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"apns": 2, "mz": 1, "direct": 2, "hms": 1, "mi": 1, "honor": 1}
	if !dry.DryRun || dry.Devices != 8 {
		t.Errorf("dry run %s: want 8 devices", out)
	}
	for ch, n := range want {
		if dry.ByChannel[ch] != n {
			t.Errorf("dry run byChannel[%s] = %d, want %d (%s)", ch, dry.ByChannel[ch], n, out)
		}
		if pl := dry.Payloads[ch]; len(pl.Payload) == 0 || pl.Error != "" {
			t.Errorf("dry run payload of %s: %+v", ch, pl)
		}
	}

	// Nothing stored, nothing sent.
	status, out, err = c.call("GET", "/1.1/notifications", true, nil)
	if err != nil || status != http.StatusOK || string(out) != `{"results":[]}` {
		t.Errorf("push records after the dry run: %d %s: %v, want none", status, out, err)
	}
	for name, s := range sims {
		if st := s.mustGet(t, false); st.Requests != 0 {
			t.Errorf("%s simulator got %d requests from a dry run", name, st.Requests)
		}
	}

	// The real push with the same query (and the dry run's req_id, never claimed) reaches
	// what the dry run counted, per channel.
	body["dry_run"] = false
	oid := c.push(t, body)
	c.waitDone(t, oid)
	status, out, err = c.call("GET", "/1.1/tables/Notifications/"+oid, true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("record: %d %s: %v", status, out, err)
	}
	var rec struct {
		Devices int64 `json:"devices"`
		Counts  struct {
			ByChannel map[string]struct {
				Targets int64 `json:"targets"`
			} `json:"byChannel"`
		} `json:"counts"`
	}
	if err := json.Unmarshal(out, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Devices != dry.Devices {
		t.Errorf("the push reached %d devices, the dry run counted %d", rec.Devices, dry.Devices)
	}
	for ch, n := range dry.ByChannel {
		if got := rec.Counts.ByChannel[ch].Targets; got != n {
			t.Errorf("channel %s: the push reached %d, the dry run counted %d", ch, got, n)
		}
	}
	for name, n := range map[string]int64{"apns": 2, "fcm": 0, "hms": 1, "mi": 1, "mz": 1, "honor": 1} {
		if st := sims[name].mustGet(t, false); st.Accepted != n {
			t.Errorf("%s simulator accepted %d pushes, want %d", name, st.Accepted, n)
		}
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
