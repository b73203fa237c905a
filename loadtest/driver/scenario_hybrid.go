package driver

import (
	"fmt"
	"time"

	"github.com/pushd/pushd/push"
)

// IsHybrid says whether scenario name pushes in the hybrid (China edition) app.
func IsHybrid(name string) bool {
	return name == ScenarioDirect || name == ScenarioMixed || name == ScenarioQuotaFill || name == ScenarioQuota
}

// buildQuotaScenario returns the quota-fill scenario (a push to as many devices as the
// simulator's day quota: every one sent) or the quota scenario that follows it (a push
// expiring after expiry to more devices: the quota is spent, so pushd parks the app+vendor
// and defers each target until the quota day resets, counted deferred on vivo, sending none;
// docs/decisions.md "Vendor quota accounting").
func buildQuotaScenario(name string, h *Hybrid, expiry time.Duration) (Scenario, error) {
	s := Scenario{Name: name, Expect: newExpect(), Hybrid: true}
	if len(h.QuotaFill) == 0 || len(h.Quota) == 0 {
		return s, fmt.Errorf("cannot build scenario %s: no vendor profile with a simulator day quota (run pushsim with --vivo-quota-profile)", name)
	}
	if name == ScenarioQuotaFill {
		s.Requests = []Request{{Path: "/1.1/push", Body: map[string]any{"channels": []string{ChannelQuotaFill}, "data": data(name)}}}
		for i := range h.QuotaFill {
			s.Expect.Alive[h.QuotaFill[i].Token] = h.QuotaFill[i].Gateway()
		}
		return s, nil
	}
	s.Requests = []Request{{Path: "/1.1/push", Body: map[string]any{"channels": []string{ChannelQuota}, "data": data(name),
		"expiration_interval": int64(expiry / time.Second)}}}
	for i := range h.Quota {
		s.Expect.Deferred[h.Quota[i].Token] = h.Quota[i].Gateway()
	}
	return s, nil
}

// BuildHybridScenario returns the direct or mixed scenario over the hybrid population h: one
// channel push whose every target must be delivered exactly once, each own-channel device
// acking it (the offline ones after they connect).
func BuildHybridScenario(name string, h *Hybrid) (Scenario, error) {
	s := Scenario{Name: name, Expect: newExpect(), Hybrid: true}
	var devs []Device
	var ch string
	switch name {
	case ScenarioQuotaFill, ScenarioQuota:
		return s, fmt.Errorf("BUG: scenario %s is built by buildQuotaScenario", name)
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
