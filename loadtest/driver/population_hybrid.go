package driver

import (
	"fmt"
	"math"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// The hybrid app's population: a China edition app (so that one push reaches the own channel
// and every vendor with a driver) holding the own-channel scenario's devices and the mixed
// scenario's devices, each set on its own channel.
const (
	ChannelDirectSet = "lt-direct" // the own-channel scenario's devices
	ChannelMixed     = "lt-mixed"  // the mixed scenario's devices
	ChannelQuotaFill = "lt-qfill"  // the quota-fill scenario's devices
	ChannelQuota     = "lt-quota"  // the quota scenario's devices
)

// Own-channel device protocols: ours (docs/own-channel.md) and the original service's.
const (
	ProtoOurs = "pushd"
	ProtoLC   = "lc.protobuf2.1"
)

// MixedChannels are the delivery channels the mixed scenario reaches in one push: the China
// edition's (apns, the own channel, and all six vendors). The international edition would
// reach only apns, direct, fcm and mi.
var MixedChannels = []string{push.ChannelAPNs, push.ChannelDirect, push.ChannelHMS, push.ChannelHonor, push.ChannelMi, push.ChannelMz, push.ChannelOppo, push.ChannelVivo}

// HybridSpec says what to generate for the hybrid app.
type HybridSpec struct {
	RunID       string
	Direct      int     // devices of the own-channel scenario
	Offline     float64 // share of own-channel devices (in both scenarios) offline during the push
	PerChannel  int     // devices per channel of the mixed scenario
	Channels    []string
	InvalidRate float64 // as PopulationSpec: tokens are picked alive for the simulators
	Seed        uint64
	// Quota is the vendor profile whose simulator app has a day quota (nil: no quota
	// scenarios): Quota.DayQuota devices for the quota-fill scenario, QuotaDevices more for
	// the quota scenario, all of Quota.Channel with deviceProfile Quota.Profile.
	Quota        *sim.QuotaProfile
	QuotaDevices int
}

// Hybrid is the hybrid app's population.
type Hybrid struct {
	Direct    []Device // own channel, subscribed to ChannelDirectSet
	Mixed     []Device // PerChannel devices of each of Channels, subscribed to ChannelMixed
	QuotaFill []Device // as many as the quota, subscribed to ChannelQuotaFill
	Quota     []Device // beyond the quota, subscribed to ChannelQuota
}

// NewHybrid generates the hybrid app's devices. Own-channel devices alternate between the two
// protocols; every k-th of them is offline so that round(Offline × n) are.
func NewHybrid(spec HybridSpec) (*Hybrid, error) {
	if spec.Offline < 0 || spec.Offline >= 1 {
		return nil, fmt.Errorf("cannot generate the hybrid population: offline share %v is not within [0, 1)", spec.Offline)
	}
	ps := PopulationSpec{RunID: spec.RunID, InvalidRate: spec.InvalidRate, Seed: spec.Seed}
	h := &Hybrid{Direct: make([]Device, spec.Direct)}
	for i := range h.Direct {
		h.Direct[i] = Device{Index: i, Channel: push.ChannelDirect, Channels: []string{ChannelDirectSet}, Group: -1}
	}
	if err := ownChannel(h.Direct, ps, "o", spec.Offline); err != nil {
		return nil, err
	}
	var direct []int
	for _, ch := range spec.Channels {
		for range spec.PerChannel {
			i := len(h.Mixed)
			d := Device{Index: i, Channel: ch, IOS: ch == push.ChannelAPNs, Channels: []string{ChannelMixed}, Group: -1}
			if ch == push.ChannelDirect {
				direct = append(direct, i)
			} else if err := d.pickToken(ps, "x", false); err != nil {
				return nil, err
			}
			if !d.IOS {
				d.IID = fmt.Sprintf("%s-x-%08d", spec.RunID, i)
			}
			h.Mixed = append(h.Mixed, d)
		}
	}
	if q := spec.Quota; q != nil {
		if q.DayQuota <= 0 || spec.QuotaDevices <= 0 || q.Channel == "" || q.Channel == push.ChannelDirect || q.Channel == push.ChannelAPNs {
			return nil, fmt.Errorf("cannot generate the quota scenarios' devices: quota %+v, %d devices", *q, spec.QuotaDevices)
		}
		mk := func(n int, cohort, ch string) ([]Device, error) {
			devs := make([]Device, n)
			for i := range devs {
				d := &devs[i]
				*d = Device{Index: i, Channel: q.Channel, Channels: []string{ch}, Group: -1, Profile: q.Profile}
				if err := d.pickToken(ps, cohort, false); err != nil {
					return nil, err
				}
			}
			return devs, nil
		}
		var err error
		if h.QuotaFill, err = mk(int(q.DayQuota), "qf", ChannelQuotaFill); err != nil {
			return nil, err
		}
		if h.Quota, err = mk(spec.QuotaDevices, "qo", ChannelQuota); err != nil {
			return nil, err
		}
	}
	if len(direct) > 0 {
		own := make([]Device, len(direct))
		for k, i := range direct {
			own[k] = h.Mixed[i]
		}
		if err := ownChannel(own, ps, "x", spec.Offline); err != nil {
			return nil, err
		}
		for k, i := range direct {
			h.Mixed[i] = own[k]
		}
	}
	return h, nil
}

// ownChannel gives own-channel devices their installation id (which is their token: the
// driver's ledger is keyed by it; the index comes first so that a report's abbreviated
// examples tell devices apart), protocol and offline flag.
func ownChannel(devs []Device, ps PopulationSpec, cohort string, offline float64) error {
	n := len(devs)
	off := int(math.Round(float64(n) * offline))
	for k := range devs {
		d := &devs[k]
		d.IID = fmt.Sprintf("%s%08d-%s", cohort, d.Index, ps.RunID)
		d.Token = d.IID
		d.Proto = ProtoOurs
		if k%2 == 1 {
			d.Proto = ProtoLC
		}
		d.Offline = off > 0 && k*off/n != (k+1)*off/n
	}
	return nil
}

// Devices returns pointers to every device of the hybrid population.
func (h *Hybrid) Devices() []*Device {
	out := make([]*Device, 0, len(h.Direct)+len(h.Mixed)+len(h.QuotaFill)+len(h.Quota))
	for _, set := range [][]Device{h.Direct, h.Mixed, h.QuotaFill, h.Quota} {
		for i := range set {
			out = append(out, &set[i])
		}
	}
	return out
}
