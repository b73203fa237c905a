package push

import "testing"

// TestVendorChannelHonor: Honor is a vendor of its own (ORIGINAL-NOTES §2.3 lists honor beside
// HMS), not an alias of hms: its devices go to the honor channel with honor's credentials.
func TestVendorChannelHonor(t *testing.T) {
	for vendor, want := range map[string]string{
		"honor": ChannelHonor, "Honor": ChannelHonor, "HONOR": ChannelHonor,
		"HMS": ChannelHMS, "hms": ChannelHMS, "huawei": ChannelHMS,
		"nokia": "",
	} {
		if got := VendorChannel(vendor); got != want {
			t.Errorf("VendorChannel(%q) = %q, want %q", vendor, got, want)
		}
	}
	r := Route{DeviceType: DeviceAndroid, Vendor: "honor", RegistrationID: "reg-1", InstallationID: "iid-1"}
	if ch, id := r.DeliveryChannel(EditionChina), r.DeviceID(); ch != ChannelHonor || id != "reg-1" {
		t.Fatalf("honor installation goes to %s as %s, want honor as reg-1", ch, id)
	}
}
