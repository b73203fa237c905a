package wire

import (
	"encoding/json"

	"github.com/pushd/pushd/push"
)

// devices decodes the parameters only /1.1/push/devices has.
func (f fields) devices(r *DevicesRequest, ed push.Edition) *push.Error {
	dt, ok, perr := f.str("device_type")
	switch {
	case perr != nil:
		return perr
	case !ok:
		return push.Errorf(push.CodeMissingRequired, "device_type is required")
	case dt != push.DeviceIOS && dt != push.DeviceAndroid:
		return push.Errorf(push.CodeValidation, `device_type must be "ios" or "android"`)
	}
	r.DeviceType = dt

	raw, ok := f["device_ids"]
	if !ok {
		return push.Errorf(push.CodeMissingRequired, "device_ids is required")
	}
	var ids []string
	if !isKind(raw, '[') || json.Unmarshal(raw, &ids) != nil {
		return typeError("device_ids", "an array of strings")
	}
	if len(ids) == 0 || len(ids) > MaxDeviceIDs {
		return push.Errorf(push.CodeValidation, "device_ids must list 1 to %d ids, got %d", MaxDeviceIDs, len(ids))
	}
	seen := make(map[string]struct{}, len(ids))
	r.DeviceIDs = make([]string, 0, len(ids))
	for _, id := range ids {
		if id == "" {
			return push.Errorf(push.CodeValidation, "device_ids must not contain an empty id")
		}
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			r.DeviceIDs = append(r.DeviceIDs, id)
		}
	}

	if r.DeviceProfile, _, perr = f.str("device_profile"); perr != nil {
		return perr
	}
	if r.DeviceProfile != push.DefaultProfile && !push.ValidProfile(r.DeviceProfile) {
		return push.Errorf(push.CodeValidation,
			"device_profile must start with a letter and hold only letters, digits and underscores")
	}
	if r.Channel, _, perr = f.str("channel"); perr != nil {
		return perr
	}
	if r.NotificationChannel == "" {
		r.NotificationChannel = r.Channel
	}

	vendor, ok, perr := f.str("vendor")
	switch {
	case perr != nil:
		return perr
	case !ok || vendor == "":
	case dt == push.DeviceIOS:
		return push.Errorf(push.CodeValidation, "vendor is only for Android hybrid push")
	default:
		ch := push.VendorChannel(vendor)
		if ch == "" {
			return push.Errorf(push.CodeValidation, "unknown vendor %q: use one of %s", vendor, vendorList(ed))
		}
		if !edition(ed).has(ch) {
			return push.Errorf(push.CodeValidation, "vendor %s is not available in the %s edition", ch, edition(ed).name())
		}
		r.Vendor = ch
	}
	return nil
}

func vendorList(ed push.Edition) string {
	s := ""
	for _, ch := range edition(ed).vendors() {
		if s != "" {
			s += ", "
		}
		s += ch
	}
	return s
}
