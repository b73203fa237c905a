package driver

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"

	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// Channel layout of the main population: installation i subscribes to channelOf(i) and to
// ChannelAll, so a push to channelOf(0) reaches exactly the installations with i%channels == 0.
const (
	channels      = 4
	ChannelAll    = "lt-all"
	ChannelDoomed = "lt-inv" // the invalid-token cohort's only channel
	groups        = 10       // ltGroup = i % groups; the where scenario targets ltGroup < whereBelow
	whereBelow    = 3
)

func channelOf(i int) string { return "lt-c" + strconv.Itoa(i%channels) }

// Device is one generated installation.
type Device struct {
	Index    int
	IOS      bool
	Token    string // iOS deviceToken, or the FCM registrationId
	IID      string // Android installationId
	Channels []string
	Group    int  // the ltGroup custom field; -1: absent (invalid cohort)
	Dead     bool // the simulators answer this token as dead (APNs 410, FCM 404)
	ObjectID string
	// Channel is the delivery channel of a device of the hybrid app (population_hybrid.go):
	// apns, direct or a vendor; "" means the main app's rule (IOS: apns, else fcm).
	Channel string
	// Proto is an own-channel device's protocol (ProtoOurs or ProtoLC); Offline says it
	// connects only after its scenario's push is done.
	Proto   string
	Offline bool
	// Profile is a hybrid device's deviceProfile ("": _default).
	Profile string
}

// Gateway is the delivery channel (and simulator) the device's pushes go to.
func (d *Device) Gateway() string {
	if d.Channel != "" {
		return d.Channel
	}
	if d.IOS {
		return push.ChannelAPNs
	}
	return push.ChannelFCM
}

// Body is the POST /1.1/installations body of d.
func (d *Device) Body(topic string) map[string]any {
	b := map[string]any{"channels": d.Channels}
	switch gw := d.Gateway(); {
	case d.IOS:
		b["deviceType"] = push.DeviceIOS
		b["deviceToken"] = d.Token
		b["apnsTopic"] = topic
	case gw == push.ChannelDirect:
		b["deviceType"] = push.DeviceAndroid
		b["installationId"] = d.IID
	case gw != push.ChannelFCM:
		b["deviceType"] = push.DeviceAndroid
		b["installationId"] = d.IID
		b["vendor"] = gw
		b["registrationId"] = d.Token
	default:
		b["deviceType"] = push.DeviceAndroid
		b["installationId"] = d.IID
		b["vendor"] = push.ChannelFCM
		b["registrationId"] = d.Token
	}
	if d.Profile != "" {
		b["deviceProfile"] = d.Profile
	}
	if d.Group >= 0 {
		b["ltGroup"] = d.Group
	}
	return b
}

// Population is every installation of one run: the main population (every token alive) and
// the invalid-token cohort (some tokens dead), which only the invalid scenarios target.
type Population struct {
	Main   []Device
	Doomed []Device
}

// PopulationSpec says what to generate.
type PopulationSpec struct {
	RunID        string // makes tokens unique per run
	N            int
	IOSFraction  float64
	Cohort       int     // invalid-token cohort size (0: none)
	DeadFraction float64 // share of the cohort with dead tokens
	// InvalidRate and Seed are the simulators' -invalid-token-rate and -seed: a token is dead
	// iff sim.IsDeadToken(token, InvalidRate, Seed); generation picks tokens by that rule.
	InvalidRate float64
	Seed        uint64
}

// maxTries bounds the search for a token of the wanted liveness; with a rate r the expected
// number of tries is 1/(1-r) for a live token and 1/r for a dead one.
const maxTries = 100000

// NewPopulation generates the installations of spec. The same spec gives the same devices.
func NewPopulation(spec PopulationSpec) (*Population, error) {
	p := &Population{Main: make([]Device, spec.N)}
	nIOS := int(math.Round(float64(spec.N) * spec.IOSFraction))
	for i := range p.Main {
		d := &p.Main[i]
		d.Index, d.IOS, d.Group = i, i < nIOS, i%groups
		d.Channels = []string{channelOf(i), ChannelAll}
		if err := d.pickToken(spec, "m", false); err != nil {
			return nil, err
		}
	}
	if spec.Cohort > 0 {
		if spec.InvalidRate <= 0 {
			return nil, fmt.Errorf("cannot generate an invalid-token cohort: the simulators' invalid token rate is %v", spec.InvalidRate)
		}
		p.Doomed = make([]Device, spec.Cohort)
		cIOS := int(math.Round(float64(spec.Cohort) * spec.IOSFraction))
		dead := int(math.Round(float64(spec.Cohort) * spec.DeadFraction))
		for i := range p.Doomed {
			d := &p.Doomed[i]
			d.Index, d.Group = i, -1
			d.IOS = i < cIOS
			// Spread the dead ones over both device types: every k-th is dead.
			d.Dead = dead > 0 && i*dead/spec.Cohort != (i+1)*dead/spec.Cohort
			d.Channels = []string{ChannelDoomed}
			if err := d.pickToken(spec, "d", d.Dead); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

func (d *Device) pickToken(spec PopulationSpec, cohort string, dead bool) error {
	var buf [8]byte
	for try := 0; try < maxTries; try++ {
		h := sha256.New()
		h.Write([]byte(spec.RunID))
		h.Write([]byte(cohort))
		binary.BigEndian.PutUint32(buf[:4], uint32(d.Index))
		binary.BigEndian.PutUint32(buf[4:], uint32(try))
		h.Write(buf[:])
		sum := h.Sum(nil)
		var tok string
		if d.IOS {
			tok = hex.EncodeToString(sum) // 64 lower-case hex digits, as pushd stores them
		} else {
			tok = "lt" + cohort + "-" + hex.EncodeToString(sum[:20]) // FCM registration token alphabet
		}
		if sim.IsDeadToken(tok, spec.InvalidRate, spec.Seed) == dead {
			d.Token = tok
			if !d.IOS {
				d.IID = fmt.Sprintf("%s-%s-%08d", spec.RunID, cohort, d.Index)
			}
			return nil
		}
	}
	return fmt.Errorf("cannot find a token of the wanted liveness in %d tries (invalid rate %v)", maxTries, spec.InvalidRate)
}
