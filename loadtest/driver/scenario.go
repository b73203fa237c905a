package driver

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/pushd/pushd/push"
)

// Request is one push call of a scenario.
type Request struct {
	Path string         // /1.1/push or /1.1/push/devices
	Body map[string]any // without req_id (the driver adds one per call)
}

// Expect is what a scenario must produce. Tokens map to the gateway (delivery channel) whose
// simulator must see them.
type Expect struct {
	Alive map[string]string // accepted exactly once each (at least once with AtLeastOnce)
	Dead  map[string]string // answered dead: counted as invalid tokens, never accepted
	// Failed tokens are counted failed, never accepted, and each record error names
	// FailReason (the quota scenario's); EndsAfter > 0: the records may not be done sooner
	// than that after they were created (the targets fail when the push expires, not before).
	Failed     map[string]string
	FailReason string
	EndsAfter  time.Duration
	// Deferred tokens are counted deferred on their vendor (held back by its spent quota
	// until the quota day resets, issue 20 item 2), never accepted during the scenario.
	Deferred map[string]string
	// AtLeastOnce allows an alive token to be accepted more than once: the kill scenario's
	// duplicates are measured (Duplicates), not refused. The records still count each target once.
	AtLeastOnce bool
}

// Targets is how many targets the push records must count.
func (e *Expect) Targets() int { return len(e.Alive) + len(e.Dead) + len(e.Failed) + len(e.Deferred) }

// byGateway counts expected targets, sent and invalid per gateway, and the own channel's
// arrivals: every own-channel target acks.
func (e *Expect) byGateway() map[string]push.Tally {
	out := map[string]push.Tally{}
	for _, gw := range e.Alive {
		t := out[gw]
		t.Targets++
		t.Sent++
		if gw == push.ChannelDirect {
			t.Arrivals++
		}
		out[gw] = t
	}
	for _, gw := range e.Dead {
		t := out[gw]
		t.Targets++
		t.InvalidTokens++
		out[gw] = t
	}
	for _, gw := range e.Failed {
		t := out[gw]
		t.Targets++
		t.Failed++
		out[gw] = t
	}
	for _, gw := range e.Deferred {
		t := out[gw]
		t.Targets++
		t.Deferred++
		out[gw] = t
	}
	return out
}

// Scenario is one push scenario: its calls and what they must deliver.
type Scenario struct {
	Name     string
	Requests []Request
	Expect   Expect
	// Gone lists installations (objectIds) that must be deleted once the scenario is done.
	Gone []string
	// Hybrid says the scenario pushes in the hybrid (China edition) app; Own lists its
	// own-channel targets, which the driver connects (the offline ones after the push).
	Hybrid bool
	Own    []*Device
}

func newExpect() Expect {
	return Expect{Alive: map[string]string{}, Dead: map[string]string{}, Failed: map[string]string{}, Deferred: map[string]string{}}
}

func data(name string) map[string]any {
	return map[string]any{"alert": "pushd load test: " + name, "title": "loadtest"}
}

// BuildScenario returns scenario name over population p. devicesPerType bounds the ids the
// devices scenario lists per device type.
func BuildScenario(name string, p *Population, devicesPerType int) (Scenario, error) {
	s := Scenario{Name: name, Expect: newExpect()}
	switch name {
	case ScenarioChannel:
		ch := channelOf(0)
		s.Requests = []Request{{Path: "/1.1/push", Body: map[string]any{"channels": []string{ch}, "data": data(name)}}}
		for i := range p.Main {
			if d := &p.Main[i]; d.Channels[0] == ch {
				s.Expect.Alive[d.Token] = d.Gateway()
			}
		}
	case ScenarioWhere:
		where := map[string]any{"ltGroup": map[string]any{"$lt": whereBelow}}
		s.Requests = []Request{{Path: "/1.1/push", Body: map[string]any{"where": where, "data": data(name)}}}
		for i := range p.Main {
			if d := &p.Main[i]; d.Group >= 0 && d.Group < whereBelow {
				s.Expect.Alive[d.Token] = d.Gateway()
			}
		}
	case ScenarioDevices:
		var ios, android []string
		for i := range p.Main {
			d := &p.Main[i]
			switch {
			case d.IOS && len(ios) < devicesPerType:
				ios = append(ios, d.Token)
			case !d.IOS && len(android) < devicesPerType:
				android = append(android, d.Token)
			default:
				continue
			}
			s.Expect.Alive[d.Token] = d.Gateway()
		}
		iosBody := map[string]any{"device_type": push.DeviceIOS, "data": data(name)}
		androidBody := map[string]any{"device_type": push.DeviceAndroid, "vendor": push.ChannelFCM, "data": data(name)}
		for _, part := range []struct {
			body map[string]any
			ids  []string
		}{{iosBody, ios}, {androidBody, android}} {
			cs, err := chunks(part.body, part.ids)
			if err != nil {
				return s, err
			}
			for _, c := range cs {
				b := maps.Clone(part.body)
				b["device_ids"] = c
				s.Requests = append(s.Requests, Request{Path: "/1.1/push/devices", Body: b})
			}
		}
	case ScenarioAll, ScenarioKill:
		s.Requests = []Request{{Path: "/1.1/push", Body: map[string]any{"channels": []string{ChannelAll}, "data": data(name)}}}
		for i := range p.Main {
			s.Expect.Alive[p.Main[i].Token] = p.Main[i].Gateway()
		}
		s.Expect.AtLeastOnce = name == ScenarioKill
	case ScenarioInvalid, ScenarioInvalidAgain:
		if len(p.Doomed) == 0 {
			return s, fmt.Errorf("cannot build scenario %s: the population has no invalid-token cohort", name)
		}
		s.Requests = []Request{{Path: "/1.1/push", Body: map[string]any{"channels": []string{ChannelDoomed}, "data": data(name)}}}
		for i := range p.Doomed {
			d := &p.Doomed[i]
			switch {
			case !d.Dead:
				s.Expect.Alive[d.Token] = d.Gateway()
			case name == ScenarioInvalid:
				s.Expect.Dead[d.Token] = d.Gateway()
				s.Gone = append(s.Gone, d.ObjectID)
			}
		}
	default:
		return s, fmt.Errorf("unknown scenario %q", name)
	}
	if len(s.Requests) == 0 || s.Expect.Targets() == 0 {
		return s, fmt.Errorf("scenario %s targets no installation of this population", name)
	}
	return s, nil
}

// Limits of one push call: at most maxDeviceIDs device_ids of at most maxIDLen characters,
// and the body without its device_ids below maxBody bytes (docs/decisions.md, "Body size of
// /1.1/push/devices").
const (
	maxDeviceIDs = 500
	maxIDLen     = 200
	maxBody      = 4096
	// reqIDRoom is what the driver's req_id adds to a body: `,"req_id":"` + 13 characters + `"`.
	reqIDRoom = 32
)

// chunks splits ids into device_ids lists of at most maxDeviceIDs ids each.
func chunks(body map[string]any, ids []string) ([][]string, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("BUG: cannot encode a push body: %w", err)
	}
	if base := len(b) + len(`,"device_ids":`) + reqIDRoom; base >= maxBody {
		return nil, fmt.Errorf("a push body without its device_ids is %d bytes, not below %d", base, maxBody)
	}
	for _, id := range ids {
		if len(id) > maxIDLen {
			return nil, fmt.Errorf("device id %q is longer than %d characters", id[:min(12, len(id))], maxIDLen)
		}
	}
	var out [][]string
	for len(ids) > 0 {
		k := min(len(ids), maxDeviceIDs)
		out = append(out, ids[:k])
		ids = ids[k:]
	}
	return out, nil
}
