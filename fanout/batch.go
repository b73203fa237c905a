package fanout

import "github.com/pushd/pushd/push"

// batch is one sender call's worth of deliveries, filled by a task's scan goroutine and
// emptied by its send goroutine. Batches are pooled and reused: the hot path allocates one
// string per batch (the arena holding every target's ids), not one per target.
type batch struct {
	ds    []push.Delivery
	res   []push.Result
	ch    []uint8     // channel index of ds[i]
	offs  [][7]uint32 // ds[i]'s strings in arena: objectId, deviceId, topic, teamId, profile, installationId
	arena []byte
	pre   tally // targets already final at scan time (no message could be rendered)
	npre  int   // how many targets pre holds
	// preReason says why pre's targets failed.
	preReason string
	cursor    []byte // the task cursor once this batch is final
	last      bool
	bd        badgeScratch // per-target APNs payloads of an "Increment" push
	// ownFirst are the indexes in ds of own_first targets queued for their vendor until the
	// batch's presence query (scanner.resolveOwnFirst).
	ownFirst []int
	mk       marketingScratch
}

func newBatch(size int) *batch {
	return &batch{
		ds:    make([]push.Delivery, 0, size),
		res:   make([]push.Result, size),
		ch:    make([]uint8, 0, size),
		offs:  make([][7]uint32, 0, size),
		arena: make([]byte, 0, size*96),
	}
}

func (b *batch) reset() {
	b.ds = b.ds[:0]
	b.ch = b.ch[:0]
	b.offs = b.offs[:0]
	b.arena = b.arena[:0]
	b.pre = tally{}
	b.npre = 0
	b.preReason = ""
	b.cursor = b.cursor[:0]
	b.last = false
	b.ownFirst = b.ownFirst[:0]
}

// add appends a delivery to route r; strings are copied into the arena and bound by seal.
//
// own sends a hybrid installation's delivery on the own channel (its installation id is the
// device id); fallback, when set, is the own-channel message a vendor_first delivery falls
// back to (the target then carries its installation id too); keepIID keeps the installation
// id of a hybrid target sent to its vendor under own_first: the batch's presence query may
// move it to the own channel (resolveOwnFirst), and a deferral may later send it there
// (quota.go).
func (b *batch) add(tmpl *push.Delivery, msg *push.Message, ch uint8, channel string, r *push.Route, own bool, fallback *push.Message, keepIID bool) {
	b.ds = append(b.ds, *tmpl)
	d := &b.ds[len(b.ds)-1]
	d.Message = msg
	d.Fallback = fallback
	d.Target = push.Target{Channel: channel, DeviceType: constDeviceType(r.DeviceType)}
	var o [7]uint32
	a := b.arena
	o[0] = uint32(len(a))
	a = append(a, r.ObjectID...)
	o[1] = uint32(len(a))
	if own {
		a = append(a, r.InstallationID...)
	} else {
		a = append(a, r.DeviceID()...)
	}
	o[2] = uint32(len(a))
	a = append(a, r.APNsTopic...)
	o[3] = uint32(len(a))
	a = append(a, r.APNsTeamID...)
	o[4] = uint32(len(a))
	a = append(a, r.DeviceProfile...)
	o[5] = uint32(len(a))
	if fallback != nil || keepIID {
		a = append(a, r.InstallationID...)
	}
	o[6] = uint32(len(a))
	if d.Target.DeviceType == "" && r.DeviceType != "" {
		// An unusual device type: keep a copy (rare, so allocating is fine).
		d.Target.DeviceType = string([]byte(r.DeviceType))
	}
	b.arena = a
	b.offs = append(b.offs, o)
	b.ch = append(b.ch, ch)
}

// seal binds every delivery's strings to one copy of the arena. After seal the batch's
// strings no longer alias anything the scan reuses.
func (b *batch) seal() {
	if len(b.ds) == 0 {
		return
	}
	s := string(b.arena)
	for i := range b.ds {
		o := &b.offs[i]
		t := &b.ds[i].Target
		t.ObjectID = s[o[0]:o[1]]
		t.DeviceID = s[o[1]:o[2]]
		t.Topic = s[o[2]:o[3]]
		t.TeamID = s[o[3]:o[4]]
		t.Profile = s[o[4]:o[5]]
		t.InstallationID = s[o[5]:o[6]]
	}
}

func constDeviceType(dt string) string {
	switch dt {
	case push.DeviceIOS:
		return push.DeviceIOS
	case push.DeviceAndroid:
		return push.DeviceAndroid
	}
	return ""
}
