package push

import "slices"

// Vendors lists the hybrid-push channels of the edition (the spec's platform keys): mi in
// both editions; hms, honor, mz, vivo and oppo in the China edition; fcm in the international
// one. An empty edition is the China edition, the default of DefaultSettings.
func (ed Edition) Vendors() []string {
	if ed == EditionInternational {
		return []string{ChannelMi, ChannelFCM}
	}
	return []string{ChannelMi, ChannelHMS, ChannelMz, ChannelVivo, ChannelOppo, ChannelHonor}
}

// HasChannel says whether the edition delivers on channel: apns and the own channel always,
// a vendor channel when it is one of Vendors.
func (ed Edition) HasChannel(channel string) bool {
	return channel == ChannelAPNs || channel == ChannelDirect || slices.Contains(ed.Vendors(), channel)
}

// Name is the edition as the API names it.
func (ed Edition) Name() string {
	if ed == EditionInternational {
		return string(EditionInternational)
	}
	return string(EditionChina)
}

// NotInEdition is the reason a vendor channel the edition lacks is refused or failed with.
func (ed Edition) NotInEdition(channel string) string {
	return "vendor " + channel + " is not available in the " + ed.Name() + " edition"
}
