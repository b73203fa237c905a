package fanout

import (
	"bytes"
	"time"

	"github.com/pushd/pushd/push"
)

// rowDoc is the query.Doc a worker evaluates the residual where against: routing fields come
// from the row's compact route, every other field from its JSON document, where only the
// asked field's value is found and decoded (topField). It is reset and reused for every row.
//
// An empty routing string (or an empty channel list) is read from the document, which tells
// an absent field from an empty one (`channels: []`, `vendor: ""`), so a push's where answers as
// the installation listing does. Values that alias the store's buffers are only read by Match
// during the scan callback, never kept.
type rowDoc struct {
	r   *push.Route
	raw []byte

	chans   []any
	chansOK bool
	// Backing for the boxed values handed to Match (see box): one slot per routing field,
	// and one per channel.
	slots     [nSlots]string
	chanSlots []string
	chansSlot []any
	// The last few document strings and numbers handed out, in rotation, so that a caller
	// holding a couple of values at once still sees each intact.
	docStrs [4]string
	docNums [4]float64
	docNext uint8
}

// Slots of rowDoc.slots.
const (
	slotObjectID = iota
	slotDeviceType
	slotDeviceToken
	slotInstallationID
	slotRegistrationID
	slotVendor
	slotDeviceProfile
	slotAPNsTopic
	slotAPNsTeamID
	nSlots
)

func (d *rowDoc) reset(r *push.Route, raw []byte) {
	d.r = r
	d.raw = raw
	d.chansOK = false
}

// Get implements query.Doc.
func (d *rowDoc) Get(field string) (any, bool) {
	switch field {
	case "objectId":
		return d.str(slotObjectID, d.r.ObjectID, field)
	case "deviceType":
		return d.str(slotDeviceType, d.r.DeviceType, field)
	case "deviceToken":
		return d.str(slotDeviceToken, d.r.DeviceToken, field)
	case "installationId":
		return d.str(slotInstallationID, d.r.InstallationID, field)
	case "registrationId":
		return d.str(slotRegistrationID, d.r.RegistrationID, field)
	case "vendor":
		return d.str(slotVendor, d.r.Vendor, field)
	case "deviceProfile":
		return d.str(slotDeviceProfile, d.r.DeviceProfile, field)
	case "apnsTopic":
		return d.str(slotAPNsTopic, d.r.APNsTopic, field)
	case "apnsTeamId":
		return d.str(slotAPNsTeamID, d.r.APNsTeamID, field)
	case "channels":
		if len(d.r.Channels) == 0 {
			return d.emptyRouteField(field)
		}
		if !d.chansOK {
			if cap(d.chanSlots) < len(d.r.Channels) {
				d.chanSlots = make([]string, len(d.r.Channels))
				d.chans = make([]any, 0, len(d.r.Channels))
			}
			d.chanSlots = d.chanSlots[:len(d.r.Channels)]
			d.chans = d.chans[:0]
			for i, c := range d.r.Channels {
				d.chans = append(d.chans, box(&d.chanSlots[i], c))
			}
			d.chansOK = true
		}
		return boxSlice(&d.chansSlot, d.chans), true
	case "updatedAt":
		if d.r.UpdatedAt == 0 {
			return d.docField(field)
		}
		return push.FormatTime(time.UnixMilli(d.r.UpdatedAt)), true
	}
	return d.docField(field)
}

func (d *rowDoc) str(slot int, s, field string) (any, bool) {
	if s == "" {
		return d.emptyRouteField(field)
	}
	return box(&d.slots[slot], s), true
}

// docField reads a field the route does not have from the JSON document. A document that
// is not well-formed JSON up to the field reads as lacking it.
func (d *rowDoc) docField(field string) (any, bool) {
	v, ok := topField(d.raw, field)
	if !ok {
		return nil, false
	}
	return d.decodeValue(v)
}

// emptyRouteField reads a routing field the route has empty from the document: present and
// empty, or absent. Most are absent, so a document without the key anywhere is answered at
// once (stored documents come from jsondoc, which never escapes an ASCII letter, so a present
// routing key appears verbatim). The needle is the key and its closing quote: a leading quote
// would make bytes.Contains stop at every quote of the document (240 ns instead of 35).
func (d *rowDoc) emptyRouteField(field string) (any, bool) {
	var q [len(`registrationId"`)]byte // the longest routing field name, and a quote
	if !bytes.Contains(d.raw, append(append(q[:0], field...), '"')) {
		return nil, false
	}
	return d.docField(field)
}
