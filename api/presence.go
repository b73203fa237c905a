package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

const routePresence = "installations_presence"

// PresenceConfig serves GET /1.1/installations/<objectId>/presence (master key; a pushd
// extension, docs/decisions.md "Presence"): whether an installation is connected to the own
// channel now and to which node, when it was last seen and when it last acked.
type PresenceConfig struct {
	// Store reads the presence the gateways record on connect, disconnect and ack.
	Store PresenceReader
	// Local, when set, is this node's gateway: the authority for the devices it holds (a
	// single node, or an api node that runs the gateway role too).
	Local LocalPresence
	// Gateways, when set (a cluster), is the registry: a connection recorded by a node that
	// no longer advertises itself is not live (the node stopped or crashed).
	Gateways GatewayLister
	Now      func() time.Time // nil: time.Now
}

// PresenceReader reads a device's recorded presence (store/pebble implements it).
type PresenceReader interface {
	DevicePresence(ctx context.Context, app, iid string) (push.DevicePresence, error)
}

// LocalPresence is this node's gateway core (sender/direct.Core).
type LocalPresence interface {
	Online(app, iid string) bool
	// Leaving: a connection was detached here and its disconnect is being recorded.
	Leaving(app, iid string) bool
	Node() string
}

// presenceView is the presence endpoint's answer.
type presenceView struct {
	ObjectID       string  `json:"objectId"`
	InstallationID string  `json:"installationId"`
	Connected      bool    `json:"connected"`
	Node           *string `json:"node"`
	ConnectedAt    *string `json:"connectedAt"`
	LastSeenAt     *string `json:"lastSeenAt"`
	LastAckAt      *string `json:"lastAckAt"`
}

// RegisterPresence adds the presence endpoint (before the routes of /1.1/installations/:id
// would shadow nothing: it has one more segment).
func (s *Server) RegisterPresence(cfg PresenceConfig) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s.Register(Route{Method: "GET", Path: "/1.1/installations/:id/presence", Name: routePresence, Auth: AuthMaster}, func(ctx *fasthttp.RequestCtx, c *Call) error {
		return s.presence(ctx, c, &cfg)
	})
}

func (s *Server) presence(ctx *fasthttp.RequestCtx, c *Call, cfg *PresenceConfig) error {
	oid := c.Params[0]
	if len(oid) > maxObjectIDLen {
		return errNoInstallation(oid)
	}
	bg := context.Background()
	inst, err := s.deps.Installations.GetInstallation(bg, c.App.ID, oid)
	if errors.Is(err, store.ErrNotFound) {
		return errNoInstallation(oid)
	}
	if err != nil {
		return fmt.Errorf("cannot read installation %s of app %s: %w", oid, c.App.ID, err)
	}
	v := presenceView{ObjectID: oid, InstallationID: inst.InstallationID}
	if inst.InstallationID != "" {
		p, err := cfg.Store.DevicePresence(bg, c.App.ID, inst.InstallationID)
		if err != nil {
			return fmt.Errorf("cannot read the presence of installation %s of app %s: %w", oid, c.App.ID, err)
		}
		now := cfg.Now()
		switch {
		case cfg.Local != nil && cfg.Local.Online(c.App.ID, inst.InstallationID):
			v.Connected = true
			p.Node = cfg.Local.Node()
		case cfg.Local != nil && cfg.Local.Leaving(c.App.ID, inst.InstallationID):
			// Disconnecting right now: the record of it follows.
			p.LastSeen = now
		case cfg.Local != nil && p.Node == cfg.Local.Node():
			// Recorded by this node's gateway, which holds no such connection now (a crash
			// before the disconnect was recorded).
		case p.Node != "" && cfg.Gateways != nil:
			list, err := cfg.Gateways.Gateways(bg, now)
			if err != nil {
				return fmt.Errorf("cannot read the gateway registry: %w", err)
			}
			v.Connected = slices.ContainsFunc(list, func(g store.Gateway) bool { return g.Node == p.Node })
		}
		if v.Connected {
			v.Node = &p.Node
			v.ConnectedAt = timeOrNil(p.ConnectedAt)
			v.LastSeenAt = timeOrNil(now) // connected: seen now
		} else {
			v.LastSeenAt = timeOrNil(p.LastSeen)
		}
		v.LastAckAt = timeOrNil(p.LastAck)
	}
	b, err := json.Marshal(&v)
	if err != nil {
		return fmt.Errorf("BUG: cannot encode a presence answer: %w", err)
	}
	WriteJSON(ctx, fasthttp.StatusOK, b)
	return nil
}

// timeOrNil formats t as the API's dates do (ISO 8601, UTC, milliseconds), nil when zero.
func timeOrNil(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z")
	return &s
}
