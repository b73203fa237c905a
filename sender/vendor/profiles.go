package vendor

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pushd/pushd/push"
)

// Profiles are one vendor's configurations of an app by profile name (push.DefaultProfile and
// the deviceProfile names), each parsed by the vendor package.
type Profiles[T any] struct {
	vendor string
	byName map[string]T
	routes map[string]string // name → routePrefix+name, built once: Route runs per delivery
}

// LoadProfiles parses raw, the app's credentials of vendor: a JSON object of named
// configurations, each a non-empty JSON object handed to parse. Errors name the profile and
// never hold secret values.
func LoadProfiles[T any](vendor string, raw []byte, parse func(raw []byte) (T, error)) (*Profiles[T], error) {
	var named map[string]json.RawMessage
	if err := json.Unmarshal(raw, &named); err != nil || named == nil {
		return nil, fmt.Errorf("cannot load %s credentials: they must be a JSON object of named configurations, e.g. {\"_default\": {...}}", vendor)
	}
	if len(named) == 0 {
		return nil, fmt.Errorf("cannot load %s credentials: no configuration (add at least %q)", vendor, push.DefaultProfile)
	}
	p := &Profiles[T]{vendor: vendor, byName: make(map[string]T, len(named)), routes: make(map[string]string, len(named))}
	names := make([]string, 0, len(named))
	for name := range named {
		names = append(names, name)
	}
	slices.Sort(names) // the first bad profile is reported the same way every time
	for _, name := range names {
		if name != push.DefaultProfile && !push.ValidProfile(name) {
			return nil, fmt.Errorf("cannot load %s credentials: configuration name %q must start with a letter and hold only letters, digits and underscores", vendor, clip(name))
		}
		c, err := parse(named[name])
		if err != nil {
			return nil, fmt.Errorf("cannot load %s credentials of configuration %q: %w", vendor, name, err)
		}
		p.byName[name] = c
		p.routes[name] = routePrefix + name
	}
	return p, nil
}

// routePrefix starts every vendor route: "profile/<name>".
const routePrefix = "profile/"

// Route names the profile serving d: its Target.Profile, push.DefaultProfile when empty. A
// profile the app has not configured is d's permanent failure, with a reason that names it
// (docs/decisions.md, Push 7: no fallback to _default for a named profile).
func (p *Profiles[T]) Route(d *push.Delivery) (string, error) {
	name := d.Target.Profile
	if name == "" {
		name = push.DefaultProfile
	}
	route, ok := p.routes[name]
	if !ok {
		return "", fmt.Errorf("hybrid push configuration %q of vendor %s is not configured for this app", clip(name), p.vendor)
	}
	return route, nil
}

// Get returns the configuration of a route returned by Route.
func (p *Profiles[T]) Get(route string) (T, error) {
	name, ok := strings.CutPrefix(route, routePrefix)
	c, found := p.byName[name]
	if !ok || !found {
		var zero T
		return zero, fmt.Errorf("cannot build %s client: unknown route %q", p.vendor, clip(route))
	}
	return c, nil
}

// Names lists the configured profile names, sorted.
func (p *Profiles[T]) Names() []string {
	out := make([]string, 0, len(p.byName))
	for n := range p.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ErrMissing is a required credential field left empty; vendor packages wrap it with the
// field's name.
var ErrMissing = errors.New("is required")

func clip(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}
