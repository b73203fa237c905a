package direct

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pushd/pushd/store"
)

// Connections is what a cluster's presence reads: the connections the gateway nodes record
// (Core.SetPresence) and the registry of live nodes (store.Store implements both).
type Connections interface {
	ConnectedNodes(ctx context.Context, appID string, iids []string, nodes []string) error
	Gateways(ctx context.Context, now time.Time) ([]store.Gateway, error)
}

// registryCacheFor bounds how stale Presence's copy of the registry may be (as the router's):
// every fan-out batch would otherwise read it.
const registryCacheFor = time.Second

// Presence answers own_first in a cluster (fan-out's Presence): an installation is connected
// to the own channel when the gateway node that owns it recorded its connection and that node
// is alive (it advertises itself in the registry); this node's own core, when it runs the
// gateway role, answers for what it holds. One store read per batch of installations, not a
// call per target (docs/decisions.md, "Channel policy").
type Presence struct {
	st    Connections
	local func() *Core // this node's gateway core, nil without the gateway role
	now   func() time.Time

	mu   sync.Mutex
	at   time.Time
	live map[string]bool // node → advertised
}

// NewPresence builds the presence over st; local gives this node's core (nil: none), asked
// at each call because the gateway role is wired after fan-out.
func NewPresence(st Connections, local func() *Core) *Presence {
	return &Presence{st: st, local: local, now: time.Now}
}

// Online implements fan-out's Presence.
func (p *Presence) Online(ctx context.Context, app string, iids []string, online []bool) error {
	nodes := make([]string, len(iids))
	if err := p.st.ConnectedNodes(ctx, app, iids, nodes); err != nil {
		return err
	}
	live, err := p.liveNodes(ctx)
	if err != nil {
		return err
	}
	var core *Core
	if p.local != nil {
		core = p.local()
	}
	for i, iid := range iids {
		switch {
		case core != nil && core.Online(app, iid):
			online[i] = true
		case nodes[i] == "":
			online[i] = false
		case core != nil && nodes[i] == core.Node():
			online[i] = false // recorded here, not held here: a crash left the record
		default:
			online[i] = live[nodes[i]]
		}
	}
	return nil
}

// LocalPresence is fan-out's Presence on one node (the embedded log): the core it gives holds
// every device. Without the gateway role (nil) none is online, and own_first targets go to
// their vendor.
type LocalPresence func() *Core

// Online implements fan-out's Presence.
func (l LocalPresence) Online(_ context.Context, app string, iids []string, online []bool) error {
	c := l()
	for i, iid := range iids {
		online[i] = c != nil && c.Online(app, iid)
	}
	return nil
}

// liveNodes is the registry's live nodes, read at most once per registryCacheFor.
func (p *Presence) liveNodes(ctx context.Context) (map[string]bool, error) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil && now.Sub(p.at) < registryCacheFor && !now.Before(p.at) {
		return p.live, nil
	}
	list, err := p.st.Gateways(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("cannot read the gateway registry: %w", err)
	}
	live := make(map[string]bool, len(list))
	for _, g := range list {
		live[g.Node] = true
	}
	p.live, p.at = live, now
	return live, nil
}
