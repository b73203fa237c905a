package fanout

import (
	"encoding/json"
	"time"

	"github.com/pushd/pushd/push"
)

// rowDoc is the query.Doc a worker evaluates the residual where against: routing fields come
// from the row's compact route, every other field from its JSON document, decoded only when
// the query asks for one (and then once per row). It is reset and reused for every row.
//
// An empty routing string (or an empty channel list) reads as an absent field, the way the
// route is built from a document lacking the field. Values that alias the store's buffers are
// only read by Match during the scan callback, never kept.
type rowDoc struct {
	r   *push.Route
	raw []byte

	decoded bool
	doc     map[string]any
	chans   []any
	chansOK bool
}

func (d *rowDoc) reset(r *push.Route, raw []byte) {
	d.r = r
	d.raw = raw
	d.decoded = false
	d.doc = nil
	d.chansOK = false
}

// routeFields are the fields rowDoc answers without decoding the document.
var routeFields = map[string]bool{
	"objectId": true, "deviceType": true, "deviceToken": true, "installationId": true,
	"registrationId": true, "vendor": true, "deviceProfile": true, "apnsTopic": true,
	"apnsTeamId": true, "channels": true, "updatedAt": true,
}

// Get implements query.Doc.
func (d *rowDoc) Get(field string) (any, bool) {
	switch field {
	case "objectId":
		return str(d.r.ObjectID)
	case "deviceType":
		return str(d.r.DeviceType)
	case "deviceToken":
		return str(d.r.DeviceToken)
	case "installationId":
		return str(d.r.InstallationID)
	case "registrationId":
		return str(d.r.RegistrationID)
	case "vendor":
		return str(d.r.Vendor)
	case "deviceProfile":
		return str(d.r.DeviceProfile)
	case "apnsTopic":
		return str(d.r.APNsTopic)
	case "apnsTeamId":
		return str(d.r.APNsTeamID)
	case "channels":
		if len(d.r.Channels) == 0 {
			return nil, false
		}
		if !d.chansOK {
			d.chans = d.chans[:0]
			for _, c := range d.r.Channels {
				d.chans = append(d.chans, c)
			}
			d.chansOK = true
		}
		return d.chans, true
	case "updatedAt":
		if d.r.UpdatedAt == 0 {
			return d.docField(field)
		}
		return time.UnixMilli(d.r.UpdatedAt).UTC().Format(isoMillis), true
	}
	return d.docField(field)
}

const isoMillis = "2006-01-02T15:04:05.000Z"

func str(s string) (any, bool) {
	if s == "" {
		return nil, false
	}
	return s, true
}

func (d *rowDoc) docField(field string) (any, bool) {
	if !d.decoded {
		d.decoded = true
		// A document that does not decode matches nothing beyond its route: its other
		// fields read as absent.
		_ = json.Unmarshal(d.raw, &d.doc)
	}
	v, ok := d.doc[field]
	return v, ok
}

// routeOnly says whether every field of fields is answered from the route.
func routeOnly(fields []string) bool {
	for _, f := range fields {
		if !routeFields[f] {
			return false
		}
	}
	return true
}
