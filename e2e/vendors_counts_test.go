package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// One query push to hybrid devices of all five vendors with a driver, through the in-process
// simulators of `pushd serve --dev --sim`: the record's counts.byChannel shows each vendor with
// exact targets, sent, failed, expired and invalidTokens. Per vendor: two live regIds, one the
// simulator calls malformed (a '"' in it: HMS drops it in its partial answer, Meizu 110003,
// vivo 10302 not found, OPPO its invalid-regId code; Xiaomi accepts it silently and names no
// dead regId), and one whose deviceProfile the app has not configured (failed with the reason).
func TestE2EVendorCountsPerChannel(t *testing.T) {
	data := t.TempDir()
	d := startDevSim(t, data)
	p, c := d.pushd, d.c
	stats := d.sims(t, push.ChannelHMS, push.ChannelMi, push.ChannelMz, push.ChannelVivo, push.ChannelOppo)
	regIDs := map[string][]string{
		push.ChannelHMS:  {"IQAAAACy0countsA", "IQAAAACy0countsB"},
		push.ChannelMi:   {"fakeMiRegIdCountsA", "fakeMiRegIdCountsB"},
		push.ChannelMz:   {"RFAKEcountsA", "RFAKEcountsB"},
		push.ChannelVivo: {"15638535410301000000011", "15638535410301000000012"},
		push.ChannelOppo: {"CN_078ad8b8a137cadb14ae5b70cf840011", "CN_078ad8b8a137cadb14ae5b70cf840012"},
	}
	n := 0
	create := func(inst map[string]any) {
		t.Helper()
		n++
		inst["deviceType"], inst["installationId"], inst["channels"] = "android", fmt.Sprintf("c0c0c0c0-0000-4000-8000-%012d", n), []string{"counts"}
		status, body, err := c.call("POST", "/1.1/installations", false, inst)
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create installation %v: %d %s: %v", inst, status, body, err)
		}
	}
	for ch, ids := range regIDs {
		for _, id := range ids {
			create(map[string]any{"vendor": ch, "registrationId": id})
		}
		create(map[string]any{"vendor": ch, "registrationId": `dead"` + ch})
		create(map[string]any{"vendor": ch, "registrationId": "noprofile" + ch, "deviceProfile": "beta"})
	}
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "Counts per vendor", "title": "Counts"}, "channels": []string{"counts"}, "_notificationChannel": "counts"})
	rec := c.waitDone(t, oid)
	if rec.Devices != 20 || rec.Successes != 11 || rec.Failures != 5 || rec.InvalidTokens != 4 || rec.Expired != 0 {
		t.Errorf("record %+v: want devices 20, successes 11, failures 5, invalidTokens 4", rec)
	}

	status, body, err := c.call("GET", "/1.1/tables/Notifications/"+oid, true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("record: %d %s: %v", status, body, err)
	}
	var full struct {
		Counts struct {
			ByChannel map[string]push.Funnel `json:"byChannel"`
		} `json:"counts"`
	}
	if err := json.Unmarshal(body, &full); err != nil {
		t.Fatal(err)
	}
	for ch := range regIDs {
		// failed counts the dead token too (failedBy names it), as the funnel does.
		want := push.Funnel{Targets: 4, Sent: 2, Failed: 2, InvalidTokens: 1,
			FailedBy: map[string]int64{push.FailConfig: 1, push.FailInvalidToken: 1}}
		if ch == push.ChannelMi { // Xiaomi's send reply names no dead regId: counted sent
			want = push.Funnel{Targets: 4, Sent: 3, Failed: 1, FailedBy: map[string]int64{push.FailConfig: 1}}
		}
		if got := full.Counts.ByChannel[ch]; !reflect.DeepEqual(got, want) {
			t.Errorf("byChannel[%s] = %+v, want %+v", ch, got, want)
		}
	}
	if len(full.Counts.ByChannel) != len(regIDs) {
		t.Errorf("byChannel has %d channels, want %d: %s", len(full.Counts.ByChannel), len(regIDs), body)
	}
	for _, e := range rec.Errors {
		if !strings.Contains(e, `"beta"`) {
			t.Errorf("record error %q, want only the missing beta profiles", e)
		}
	}
	// Each live regId reached its vendor once.
	for ch, ids := range regIDs {
		st := stats[ch].mustGet(t, true)
		for _, id := range ids {
			if st.PerToken[id] != 1 {
				t.Errorf("%s simulator: %s delivered %d times", ch, id, st.PerToken[id])
			}
		}
		if st.Accepted != 2 {
			t.Errorf("%s simulator accepted %d, want 2", ch, st.Accepted)
		}
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
