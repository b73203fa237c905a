package fanout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// editionInst is an Android installation with vendor and a registration id.
func editionInst(i int, vendor string, now time.Time) push.Installation {
	r := push.Route{ObjectID: fmt.Sprintf("ed%022d", i), DeviceType: push.DeviceAndroid, InstallationID: fmt.Sprintf("iid-%d", i),
		RegistrationID: fmt.Sprintf("reg-%d", i), Vendor: vendor, UpdatedAt: now.UnixMilli()}
	doc := fmt.Sprintf(`{"objectId":%q,"deviceType":"android","installationId":%q,"registrationId":%q,"vendor":%q}`, r.ObjectID, r.InstallationID, r.RegistrationID, vendor)
	return push.Installation{Route: r, CreatedAt: now.UnixMilli(), Doc: []byte(doc)}
}

// TestFanoutEditionVendors: the spec's editions hold at fan-out. A vendor of the other edition
// (stored before the app changed edition) fails its targets with the reason and reaches no
// sender; the edition's own vendors are sent; an unknown stored vendor goes to the own
// channel by installationId, as before the rule on vendor.
func TestFanoutEditionVendors(t *testing.T) {
	vendors := []string{"hms", "Honor", "meizu", "vivo", "oppo", "fcm", "mi", "nokia"}
	for _, ed := range []push.Edition{push.EditionChina, push.EditionInternational} {
		t.Run(string(ed), func(t *testing.T) {
			e := newEnv(t)
			e.createApp(4, func(s *push.AppSettings) { s.Edition = ed })
			now := time.Now()
			insts := make([]push.Installation, len(vendors))
			for i, v := range vendors {
				insts[i] = editionInst(i, v, now)
			}
			if err := e.st.SeedInstallations(testApp, 4, insts); err != nil {
				t.Fatal(err)
			}
			snd := newRecSender()
			snd.keep = true
			e.start(DefaultWorkerConfig(), snd, 1)
			rec := e.waitDone(e.submit(push.Job{}).NotificationObjectID)

			want := push.Counts{push.ChannelDirect: {Targets: 1, Sent: 1}}
			var wantErrs []string
			for _, v := range vendors[:7] {
				ch := push.VendorChannel(v)
				if ed.HasChannel(ch) {
					want[ch] = push.Tally{Targets: 1, Sent: 1}
				} else {
					want[ch] = push.Tally{Targets: 1, Failed: 1, FailedBy: map[string]int64{push.FailConfig: 1}}
					wantErrs = append(wantErrs, "vendor "+ch+" is not available in the "+string(ed)+" edition")
				}
			}
			checkCounts(t, rec.Counts, want)
			for _, d := range snd.ds {
				if !ed.HasChannel(d.Target.Channel) {
					t.Errorf("%s target reached the sender in the %s edition", d.Target.Channel, ed)
				}
				if d.Target.Channel == push.ChannelDirect && d.Target.DeviceID != "iid-7" {
					t.Errorf("own-channel target %+v, want the nokia installation by installationId", d.Target)
				}
			}
			if len(rec.Errors) == 0 || !slices.Contains(wantErrs, rec.Errors[0]) {
				t.Errorf("record errors %q, want one of %q", rec.Errors, wantErrs)
			}
		})
	}
}
