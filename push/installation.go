package push

import (
	"hash/fnv"
	"time"
)

// Device types.
const (
	DeviceIOS     = "ios"
	DeviceAndroid = "android"
)

// Delivery channels: where a target's pushes go. ChannelDirect is our own Android connection;
// the vendor channels are named as the per-platform keys of a push's data object.
const (
	ChannelAPNs   = "apns"
	ChannelDirect = "direct"
	ChannelFCM    = "fcm"
	ChannelMi     = "mi"
	ChannelHMS    = "hms"
	ChannelMz     = "mz"
	ChannelVivo   = "vivo"
	ChannelOppo   = "oppo"
	// ChannelHonor is Honor's own push service: a vendor of its own (ORIGINAL-NOTES §2.3
	// lists it beside HMS), with its own credentials and gateway since Honor left Huawei.
	ChannelHonor = "honor"
)

// IDKind names a device-id index: deviceToken (iOS), installationId (Android own channel),
// registrationId (hybrid Android). Each is unique within an app.
type IDKind string

const (
	KindToken IDKind = "token"
	KindIID   IDKind = "iid"
	KindRegID IDKind = "regid"
)

// DefaultProfile is the hybrid-push configuration used when an installation's deviceProfile is empty.
const DefaultProfile = "_default"

// InactiveAfter is how long an installation may go without a refresh before it is deleted.
const InactiveAfter = 90 * 24 * time.Hour

// Route is the compact set of fields fan-out needs to filter and deliver to one installation
// without decoding its JSON document. Index rows store it in a binary encoding, routing fields first.
type Route struct {
	ObjectID       string
	DeviceType     string
	DeviceToken    string
	InstallationID string
	RegistrationID string
	Vendor         string
	DeviceProfile  string
	APNsTopic      string
	APNsTeamID     string
	Channels       []string
	Invalid        bool  // the `valid` field is false: excluded from pushes
	UpdatedAt      int64 // unix milliseconds
}

// Installation is one stored installation: its route and its full JSON document, exactly as
// GET /1.1/installations/<id> returns it (objectId, createdAt, updatedAt included).
type Installation struct {
	Route
	CreatedAt int64 // unix milliseconds
	Doc       []byte
}

// DeliveryChannel says where pushes to this installation go.
func (r *Route) DeliveryChannel(ed Edition) string {
	if r.DeviceType == DeviceIOS {
		return ChannelAPNs
	}
	if r.Vendor != "" && r.RegistrationID != "" {
		v := VendorChannel(r.Vendor)
		if v != "" {
			return v
		}
	}
	return ChannelDirect
}

// DeviceID is the id a gateway addresses this installation by.
func (r *Route) DeviceID() string {
	switch {
	case r.DeviceType == DeviceIOS:
		return r.DeviceToken
	case r.Vendor != "" && r.RegistrationID != "" && VendorChannel(r.Vendor) != "":
		return r.RegistrationID
	default: // the own channel, where DeliveryChannel sends an unknown vendor too
		return r.InstallationID
	}
}

// VendorChannel maps a stored vendor name (the original service stores e.g. "HMS", "mi",
// "meizu") to its delivery channel, or "" when the vendor is unknown.
func VendorChannel(vendor string) string {
	switch vendor {
	case "mi", "xiaomi", "Mi", "MI":
		return ChannelMi
	case "hms", "HMS", "huawei", "Huawei", "HUAWEI":
		return ChannelHMS
	case "honor", "Honor", "HONOR":
		return ChannelHonor
	case "mz", "meizu", "MZ", "Meizu":
		return ChannelMz
	case "vivo", "VIVO":
		return ChannelVivo
	case "oppo", "OPPO":
		return ChannelOppo
	case "fcm", "FCM":
		return ChannelFCM
	}
	return ""
}

// Bucket places an object id in one of n buckets (n a power of two). The hash is FNV-1a:
// stable across releases and processes, which the on-disk layout depends on.
func Bucket(objectID string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(objectID))
	return int(h.Sum32() & uint32(n-1))
}

// DeviceRef is one device id of an installation with the index it is unique in.
type DeviceRef struct {
	Kind IDKind
	ID   string
}

// DeviceIDs lists the installation's device ids in the order an upsert matches them
// (installationId, deviceToken, registrationId, as Parse does).
func (r *Route) DeviceIDs() []DeviceRef {
	out := make([]DeviceRef, 0, 3)
	if r.InstallationID != "" {
		out = append(out, DeviceRef{KindIID, r.InstallationID})
	}
	if r.DeviceToken != "" {
		out = append(out, DeviceRef{KindToken, r.DeviceToken})
	}
	if r.RegistrationID != "" {
		out = append(out, DeviceRef{KindRegID, r.RegistrationID})
	}
	return out
}

// ValidProfile says whether p is a valid deviceProfile: empty, or a letter followed by
// letters, digits and underscores (the spec's rule).
func ValidProfile(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9') && c != '_') {
			return false
		}
	}
	return true
}
