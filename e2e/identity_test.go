package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// simSent reads what a simulator recorded as accepted (GET /_sent).
func (s *simClient) simSent(t *testing.T) []sim.Sent {
	t.Helper()
	res, err := s.c.Get(s.url + "/_sent")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var all []sim.Sent
	if err := json.NewDecoder(res.Body).Decode(&all); err != nil {
		t.Fatal(err)
	}
	return all
}

// notifyIDsOf lists the notification ids the simulator saw for token, oldest first.
func (s *simClient) notifyIDsOf(t *testing.T, token string) []string {
	t.Helper()
	var out []string
	for _, x := range s.simSent(t) {
		for _, tok := range bytes.Split([]byte(x.Target), []byte(",")) {
			if string(tok) == token {
				out = append(out, x.NotifyID)
			}
		}
	}
	return out
}

// One identity across channels, on the wire of every channel, through the real binary and the
// gateway simulators of `pushd serve --dev --sim`: a push with notification_id reaches an iOS
// device, hybrid devices of all six vendors, and own-channel devices on both protocols; each
// simulator records the id its gateway's request carried (the vendors' notify id or Meizu's
// notifyKey: vendor.NotifyID of the notification id) and each device reads the notification
// id itself (our frame's nid, the original protocol's _nid). APNs carries no collapse id unless
// the caller asks. A second push with the same notification_id, after the app moved to the
// international edition, reaches an FCM device with the id as its notification tag and APNs
// with the caller's collapse-id, and the own-channel devices show it only once: each counts
// the second frame as a wire duplicate.
func TestE2EOneIdentityOnEveryChannel(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	t.Setenv("PUSHD_ADMIN_TOKEN", e2eAdminToken)
	data := t.TempDir()
	d := startDevSim(t, data)
	p, keys, c := d.pushd, d.keys, d.c
	sims := d.sims(t, push.ChannelAPNs, push.ChannelFCM, push.ChannelHMS, push.ChannelHonor,
		push.ChannelMi, push.ChannelMz, push.ChannelVivo, push.ChannelOppo)

	const iosToken = "1d1d1d1d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f1"
	regIDs := map[string]string{
		push.ChannelHMS:   "IQAAAACy0identityA",
		push.ChannelHonor: "AQAAAACy0honorIdentity",
		push.ChannelMi:    "fakeMiRegIdIdentity",
		push.ChannelMz:    "RFAKEmzIdentity",
		push.ChannelVivo:  "15638535410301000000031",
		push.ChannelOppo:  "CN_078ad8b8a137cadb14ae5b70cf840031",
	}
	const fcmToken = "fcmIdentityToken:APA91bH-identity"
	ident := []string{"ident"}
	create := func(inst map[string]any) {
		t.Helper()
		inst["channels"] = ident
		status, body, err := c.call("POST", "/1.1/installations", false, inst)
		if err != nil || status != http.StatusCreated {
			t.Fatalf("create installation %v: %d %s: %v", inst, status, body, err)
		}
	}
	create(map[string]any{"deviceType": "ios", "deviceToken": iosToken, "apnsTopic": "com.example.pushd"})
	n := 0
	for ch, id := range regIDs {
		n++
		create(map[string]any{"deviceType": "android", "installationId": "1d000000-0000-4000-8000-00000000000" + strconv.Itoa(n), "vendor": ch, "registrationId": id})
	}
	const ownIID, lcIID = "1d000000-0000-4000-8000-0000000000a1", "1d000000-0000-4000-8000-0000000000a2"
	create(map[string]any{"deviceType": "android", "installationId": ownIID})
	create(map[string]any{"deviceType": "android", "installationId": lcIID})
	own, lc := sim.NewLedger(), sim.NewLedger()
	c.dialDevice(t, ownIID, own)
	c.dialLCDevice(t, lcIID, lc)

	const nid = "idAcross1"
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "One identity", "title": "Id"}, "channels": ident, "notification_id": nid})
	c.waitDone(t, oid)
	waitfor.True(t, pushTimeout, "both own-channel devices to get the push", func() bool {
		return own.Times(oid) == 1 && lc.Times(oid) == 1
	})
	if got := own.NID(oid); got != nid {
		t.Errorf("own protocol: nid %q, want %q", got, nid)
	}
	if got := lc.NID(oid); got != nid {
		t.Errorf("original's protocol: _nid %q, want %q (data %s)", got, nid, lc.Data(oid))
	}
	num := strconv.FormatInt(vendor.NotifyID(nid), 10)
	for ch, id := range regIDs {
		want := num
		if ch == push.ChannelMz {
			want = vendor.NotifyKey(nid)
		}
		if got := sims[ch].notifyIDsOf(t, id); len(got) != 1 || got[0] != want {
			t.Errorf("%s: the request for %s carried notify ids %q, want [%q]", ch, id, got, want)
		}
	}
	if got := sims[push.ChannelAPNs].notifyIDsOf(t, iosToken); len(got) != 1 || got[0] != "" {
		t.Errorf("apns: collapse ids %q, want one request without apns-collapse-id (none asked)", got)
	}
	if got := sims[push.ChannelFCM].notifyIDsOf(t, fcmToken); len(got) != 0 {
		t.Errorf("fcm got %q in the China edition", got)
	}

	// The same notification again, on FCM (international edition) and with collapsing asked.
	putSettings(t, p.base, keys.AppID, map[string]any{"edition": "international"})
	create(map[string]any{"deviceType": "android", "installationId": "1d000000-0000-4000-8000-0000000000f1", "vendor": "fcm", "registrationId": fcmToken})
	oid2 := c.push(t, map[string]any{"data": map[string]any{"alert": "One identity", "collapse-id": "ident-c"}, "channels": ident, "notification_id": nid})
	c.waitDone(t, oid2)
	waitfor.True(t, pushTimeout, "both own-channel devices to get the second push", func() bool {
		return own.Times(oid2) == 1 && lc.Times(oid2) == 1
	})
	if got := sims[push.ChannelFCM].notifyIDsOf(t, fcmToken); len(got) != 1 || got[0] != nid {
		t.Errorf("fcm: notification tags %q, want [%q]", got, nid)
	}
	if got := sims[push.ChannelAPNs].notifyIDsOf(t, iosToken); len(got) != 2 || got[1] != "ident-c" {
		t.Errorf("apns: collapse ids %q, want the second request with the caller's ident-c", got)
	}
	for name, l := range map[string]*sim.Ledger{"own protocol": own, "original's protocol": lc} {
		if shown := l.Shown(); len(shown) != 1 || shown[0] != nid {
			t.Errorf("%s: shown %q, want the notification %s once", name, shown, nid)
		}
		if d := l.WireDuplicates(); d != 1 {
			t.Errorf("%s: %d wire duplicates, want 1 (the second push of %s)", name, d, nid)
		}
	}
}
