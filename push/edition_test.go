package push

import "testing"

// TestEditionVendors: the spec's platform table — hms, honor, mz, vivo, oppo in the China
// edition only, fcm in the international edition only, mi, apns and the own channel in both;
// an empty edition is the China edition.
func TestEditionVendors(t *testing.T) {
	for ch, want := range map[string][2]bool{ // china, international
		ChannelAPNs: {true, true}, ChannelDirect: {true, true}, ChannelMi: {true, true},
		ChannelHMS: {true, false}, ChannelHonor: {true, false}, ChannelMz: {true, false},
		ChannelVivo: {true, false}, ChannelOppo: {true, false}, ChannelFCM: {false, true},
	} {
		for i, ed := range []Edition{EditionChina, EditionInternational} {
			if got := ed.HasChannel(ch); got != want[i] {
				t.Errorf("%s edition has %s: %v, want %v", ed, ch, got, want[i])
			}
		}
		if Edition("").HasChannel(ch) != want[0] {
			t.Errorf("empty edition differs from china on %s", ch)
		}
	}
}

// TestRouteUnknownVendorIsOwnChannel: an installation stored with an unknown vendor (before
// the API refused one) is addressed on the own channel by its installationId, not by the
// registrationId the own channel does not know.
func TestRouteUnknownVendorIsOwnChannel(t *testing.T) {
	r := Route{DeviceType: DeviceAndroid, Vendor: "nokia", RegistrationID: "reg-1", InstallationID: "iid-1"}
	if ch, id := r.DeliveryChannel(EditionChina), r.DeviceID(); ch != ChannelDirect || id != "iid-1" {
		t.Fatalf("nokia installation goes to %s as %s, want direct as iid-1", ch, id)
	}
	r.Vendor = "meizu"
	if ch, id := r.DeliveryChannel(EditionChina), r.DeviceID(); ch != ChannelMz || id != "reg-1" {
		t.Fatalf("meizu installation goes to %s as %s, want mz as reg-1", ch, id)
	}
}
