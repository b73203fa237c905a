package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// freeLoopbackPort is a port free on 127.0.0.1 a moment ago: the API's, so that --receipt-url
// can name it before pushd starts.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startPushdReceipts starts `pushd serve --dev --sim` whose vendor simulators post their
// receipts to its API, reporting the share uninstalled of the tokens they accept; flagged: with
// --receipt-url, else its --sim default (the API's port on 127.0.0.1).
func startPushdReceipts(t *testing.T, uninstalled float64, flagged bool) *devSim {
	t.Helper()
	data := t.TempDir()
	port := freeLoopbackPort(t)
	args := []string{"--addr", "127.0.0.1:" + port, "--sim-receipt-uninstalled", strconv.FormatFloat(uninstalled, 'f', -1, 64)}
	if flagged {
		args = append(args, "--receipt-url", "http://127.0.0.1:"+port)
	}
	return startDevSim(t, data, args...)
}

// receiptInstallation creates a hybrid installation of vendor with regId id; it returns its objectId.
func receiptInstallation(t *testing.T, c *client, n int, vendor, id string) string {
	t.Helper()
	inst := map[string]any{"deviceType": "android", "installationId": fmt.Sprintf("e0e0e0e0-0000-4000-8000-%012d", n),
		"channels": []string{"receipts"}, "vendor": vendor, "registrationId": id}
	status, body, err := c.call("POST", "/1.1/installations", false, inst)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("create installation %v: %d %s: %v", inst, status, body, err)
	}
	var r struct {
		ObjectID string `json:"objectId"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.ObjectID == "" {
		t.Fatalf("installation answer %s: %v", body, err)
	}
	return r.ObjectID
}

// byChannel reads the record's per-channel counts.
func byChannel(t *testing.T, c *client, oid string) map[string]push.Tally {
	t.Helper()
	status, body, err := c.call("GET", "/1.1/tables/Notifications/"+oid, true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("record: %d %s: %v", status, body, err)
	}
	var full struct {
		Counts struct {
			ByChannel map[string]push.Tally `json:"byChannel"`
		} `json:"counts"`
	}
	if err := json.Unmarshal(body, &full); err != nil {
		t.Fatal(err)
	}
	return full.Counts.ByChannel
}

func installationExists(t *testing.T, c *client, oid string) bool {
	t.Helper()
	status, body, err := c.call("GET", "/1.1/installations/"+oid, true, nil)
	if err != nil || (status != http.StatusOK && status != http.StatusNotFound) {
		t.Fatalf("installation %s: %d %s: %v", oid, status, body, err)
	}
	return status == http.StatusOK
}

// One push to hybrid devices of all six vendors through `pushd serve --dev --sim`, whose
// simulators post receipts to the API (HMS and Honor signed with the console's callback key,
// the others to the callback URL the senders put in each request): each vendor's arrivals on
// the record become the devices the receipts confirmed, and the devices reported uninstalled
// (HMS/Honor status 2, Xiaomi type 16, OPPO regid_invalid) lose their installation, while those
// of vivo and Meizu, whose receipts report arrivals only, keep theirs.
func TestE2EReceiptsFromEveryVendor(t *testing.T) {
	const share = 0.3
	d := startPushdReceipts(t, share, true)
	p, c := d.pushd, d.c
	ids := map[string][]string{}
	for i := range 8 {
		ids[push.ChannelHMS] = append(ids[push.ChannelHMS], fmt.Sprintf("IQAAAACy0receipt%02d", i))
		ids[push.ChannelHonor] = append(ids[push.ChannelHonor], fmt.Sprintf("honorReceiptToken%02d", i))
		ids[push.ChannelMi] = append(ids[push.ChannelMi], fmt.Sprintf("fakeMiRegIdReceipt%02d", i))
		ids[push.ChannelOppo] = append(ids[push.ChannelOppo], fmt.Sprintf("CN_078ad8b8a137cadb14ae5b70cf8401%02d", i))
		ids[push.ChannelMz] = append(ids[push.ChannelMz], fmt.Sprintf("RFAKEreceipt%02d", i))
	}
	// vivo sends receipts of single sends only: one device, one the simulator reports arrived.
	for i := 0; ; i++ {
		id := fmt.Sprintf("156385354103010000%05d", i)
		if !sim.ReceiptUninstalled(id, share, 0) {
			ids[push.ChannelVivo] = []string{id}
			break
		}
	}
	deadReceipts := map[string]bool{push.ChannelHMS: true, push.ChannelHonor: true, push.ChannelMi: true, push.ChannelOppo: true}
	type dev struct{ vendor, id, oid string }
	var devs []dev
	want := map[string]int64{}
	someDead := false
	for vendor, list := range ids {
		for _, id := range list {
			devs = append(devs, dev{vendor, id, receiptInstallation(t, c, len(devs)+1, vendor, id)})
			if sim.ReceiptUninstalled(id, share, 0) {
				someDead = someDead || deadReceipts[vendor]
				continue
			}
			want[vendor]++
		}
	}
	if !someDead {
		t.Fatal("no token of a vendor with dead-token receipts is reported uninstalled: pick other ids")
	}
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "Receipts", "title": "Receipts"}, "channels": []string{"receipts"}, "_notificationChannel": "receipts"})
	c.waitDone(t, oid)
	var got map[string]push.Tally
	waitfor.True(t, pushTimeout, "every vendor's arrivals from its receipts", func() bool {
		got = byChannel(t, c, oid)
		for vendor := range ids {
			if got[vendor].Arrivals != want[vendor] {
				return false
			}
		}
		return true
	})
	for vendor := range ids {
		if tl := got[vendor]; tl.Targets != int64(len(ids[vendor])) || tl.Sent != int64(len(ids[vendor])) {
			t.Errorf("%s: %+v; want every target sent", vendor, tl)
		}
	}
	waitfor.True(t, pushTimeout, "the installations of uninstalled devices deleted", func() bool {
		for _, d := range devs {
			dead := deadReceipts[d.vendor] && sim.ReceiptUninstalled(d.id, share, 0)
			if installationExists(t, c, d.oid) == dead {
				return false
			}
		}
		return true
	})
	// A receipt that does not authenticate, or that the vendor's shape does not read, is refused
	// with {code, error} and changes nothing.
	before := byChannel(t, c, oid)
	for _, r := range []struct {
		path, body string
		status     int
	}{
		{"/receipts/mi/" + c.appID + "/0123456789abcdef0123456789abcdef", "data=%7B%7D", http.StatusUnauthorized},
		{"/receipts/hms/" + c.appID, `{"statuses":[]}`, http.StatusUnauthorized},
		{"/receipts/nokia/" + c.appID + "/x", "{}", http.StatusNotFound},
	} {
		res, err := http.Post(p.base+r.path, "application/x-www-form-urlencoded", strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Code  int    `json:"code"`
			Error string `json:"error"`
		}
		err = json.NewDecoder(res.Body).Decode(&e)
		res.Body.Close()
		if res.StatusCode != r.status || err != nil || e.Code == 0 || e.Error == "" {
			t.Errorf("POST %s: %d {code %d, error %q} (%v); want %d with code and error", r.path, res.StatusCode, e.Code, e.Error, err, r.status)
		}
	}
	if after := byChannel(t, c, oid); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("refused receipts changed the record: %v, was %v", after, before)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}

// Every accepted Xiaomi regId of an app reported invalid by its receipts: as for a burst of
// dead-token answers, the guard deletes sender.Config.InvalidGuard (50) installations and keeps
// the rest (more dead tokens than arrivals), and the record counts no arrival.
func TestE2EReceiptsDeadBurstStopsAtTheGuard(t *testing.T) {
	d := startPushdReceipts(t, 1, false)
	p, c := d.pushd, d.c
	const n = 60
	oids := make([]string, n)
	for i := range n {
		oids[i] = receiptInstallation(t, c, i+1, push.ChannelMi, fmt.Sprintf("fakeMiRegIdBurst%03d", i))
	}
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "Burst", "title": "Burst"}, "channels": []string{"receipts"}})
	c.waitDone(t, oid)
	left := n
	waitfor.True(t, pushTimeout, "the guard's 50 installations deleted", func() bool {
		left = 0
		for _, o := range oids {
			if installationExists(t, c, o) {
				left++
			}
		}
		return left == n-50
	})
	// The receipts are all in (the simulator counts what it posted); no more is deleted.
	sc := d.sim(t, push.ChannelMi)
	st := sc.mustGet(t, false)
	if st.ByReason["receipt_16"] == 0 {
		t.Errorf("the Xiaomi simulator posted no invalid-target receipt: %v", st.ByReason)
	}
	if got := byChannel(t, c, oid)[push.ChannelMi]; got.Arrivals != 0 || got.Sent != n {
		t.Errorf("mi counts %+v; want %d sent, no arrival", got, n)
	}
	kept := 0
	for _, o := range oids {
		if installationExists(t, c, o) {
			kept++
		}
	}
	if kept != n-50 {
		t.Errorf("%d installations kept; want %d (the guard stops after 50)", kept, n-50)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
