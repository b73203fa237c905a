package driver

import (
	"fmt"

	"github.com/pushd/pushd/push"
)

// IsHybrid says whether scenario name pushes in the hybrid (China edition) app.
func IsHybrid(name string) bool { return name == ScenarioDirect || name == ScenarioMixed }

// BuildHybridScenario returns the direct or mixed scenario over the hybrid population h: one
// channel push whose every target must be delivered exactly once, each own-channel device
// acking it (the offline ones after they connect).
func BuildHybridScenario(name string, h *Hybrid) (Scenario, error) {
	s := Scenario{Name: name, Expect: newExpect(), Hybrid: true}
	var devs []Device
	var ch string
	switch name {
	case ScenarioDirect:
		devs, ch = h.Direct, ChannelDirectSet
	case ScenarioMixed:
		devs, ch = h.Mixed, ChannelMixed
	default:
		return s, fmt.Errorf("unknown scenario %q", name)
	}
	body := map[string]any{"channels": []string{ch}, "data": data(name)}
	s.Requests = []Request{{Path: "/1.1/push", Body: body}}
	for i := range devs {
		d := &devs[i]
		s.Expect.Alive[d.Token] = d.Gateway()
		if d.Gateway() == push.ChannelDirect {
			s.Own = append(s.Own, d)
		}
	}
	if len(devs) == 0 {
		return s, fmt.Errorf("cannot build scenario %s: it targets nobody", name)
	}
	return s, nil
}
