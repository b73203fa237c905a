package store

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/pushd/pushd/push"
)

// Route encoding: what index rows (by_bucket, by_channel; the Cassandra `route` column) keep
// beside the document, so that fan-out can filter and address a target without decoding JSON.
//
//	version(1) flags(1)
//	deviceType deviceToken installationId registrationId vendor deviceProfile apnsTopic apnsTeamId
//	objectId                       (each: uvarint length + bytes; routing fields first)
//	updatedAt                      (varint, unix ms)
//	channel count, channels        (uvarint, then uvarint length + bytes each)
//
// An index row's value is the encoded route immediately followed by the JSON document.

// ErrBadRoute reports an encoded route that does not decode.
var ErrBadRoute = errors.New("malformed route encoding")

const (
	routeVersion     = 1
	routeFlagInvalid = 1 << 0
)

// AppendRoute appends the binary encoding of r to dst.
func AppendRoute(dst []byte, r *push.Route) []byte {
	var flags byte
	if r.Invalid {
		flags |= routeFlagInvalid
	}
	dst = append(dst, routeVersion, flags)
	dst = appendStr(dst, r.DeviceType)
	dst = appendStr(dst, r.DeviceToken)
	dst = appendStr(dst, r.InstallationID)
	dst = appendStr(dst, r.RegistrationID)
	dst = appendStr(dst, r.Vendor)
	dst = appendStr(dst, r.DeviceProfile)
	dst = appendStr(dst, r.APNsTopic)
	dst = appendStr(dst, r.APNsTeamID)
	dst = appendStr(dst, r.ObjectID)
	dst = binary.AppendVarint(dst, r.UpdatedAt)
	dst = binary.AppendUvarint(dst, uint64(len(r.Channels)))
	for _, c := range r.Channels {
		dst = appendStr(dst, c)
	}
	return dst
}

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// DecodeRoute decodes a route from the front of src into r, copying every string, and says
// how many bytes it used (the rest of an index row's value is its document). r.Channels is
// reused when it has capacity.
func DecodeRoute(src []byte, r *push.Route) (int, error) { return decodeRoute(src, r, false) }

// DecodeRouteAlias is DecodeRoute without copies: r's strings alias src, so r is valid only
// while src is unchanged. It allocates nothing once r.Channels has grown to fit. The scan path
// uses it.
func DecodeRouteAlias(src []byte, r *push.Route) (int, error) { return decodeRoute(src, r, true) }

func decodeRoute(src []byte, r *push.Route, alias bool) (int, error) {
	if len(src) < 2 || src[0] != routeVersion {
		return 0, ErrBadRoute
	}
	flags := src[1]
	if flags&^routeFlagInvalid != 0 {
		return 0, ErrBadRoute
	}
	d := routeDecoder{src: src, off: 2, alias: alias}
	r.Invalid = flags&routeFlagInvalid != 0
	r.DeviceType = d.str()
	r.DeviceToken = d.str()
	r.InstallationID = d.str()
	r.RegistrationID = d.str()
	r.Vendor = d.str()
	r.DeviceProfile = d.str()
	r.APNsTopic = d.str()
	r.APNsTeamID = d.str()
	r.ObjectID = d.str()
	r.UpdatedAt = d.varint()
	n := d.uvarint()
	if d.err || n > uint64(len(src)-d.off) { // each channel takes at least one byte
		return 0, ErrBadRoute
	}
	if n == 0 {
		r.Channels = r.Channels[:0]
	} else {
		if uint64(cap(r.Channels)) < n {
			r.Channels = make([]string, 0, n)
		}
		r.Channels = r.Channels[:n]
		for i := range r.Channels {
			r.Channels[i] = d.str()
		}
	}
	if d.err {
		return 0, ErrBadRoute
	}
	return d.off, nil
}

type routeDecoder struct {
	src   []byte
	off   int
	alias bool
	err   bool
}

func (d *routeDecoder) uvarint() uint64 {
	if d.err {
		return 0
	}
	v, n := binary.Uvarint(d.src[d.off:])
	// A varint longer than its minimal encoding (e.g. 0x80 0x00 for 0) is never written by
	// AppendRoute: refuse it, so one value has one encoding.
	if n <= 0 || n != uvarintLen(v) {
		d.err = true
		return 0
	}
	d.off += n
	return v
}

// uvarintLen is the length of v's minimal varint encoding.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func (d *routeDecoder) varint() int64 {
	if d.err {
		return 0
	}
	v, n := binary.Varint(d.src[d.off:])
	ux := uint64(v) << 1 // binary.Varint's zig-zag form of v
	if v < 0 {
		ux = ^ux
	}
	if n <= 0 || n != uvarintLen(ux) {
		d.err = true
		return 0
	}
	d.off += n
	return v
}

func (d *routeDecoder) str() string {
	n := d.uvarint()
	if d.err {
		return ""
	}
	if n > uint64(len(d.src)-d.off) {
		d.err = true
		return ""
	}
	b := d.src[d.off : d.off+int(n)]
	d.off += int(n)
	if n == 0 {
		return ""
	}
	if d.alias {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

// AppendIndexValue appends an index row's value: the route, then the document.
func AppendIndexValue(dst []byte, r *push.Route, doc []byte) []byte {
	return append(AppendRoute(dst, r), doc...)
}
