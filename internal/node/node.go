// Package node assembles one pushd node: it opens the store and the durable log of a Config,
// wires the roles the Config names (scheduler, fanout, gateway, api) as an ordered
// service.Group, and runs it. cmd/pushd builds its node here from flags; the multi-node
// harness (internal/clustertest) builds several in one process over one store and one Kafka.
package node

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/console"
	"github.com/pushd/pushd/internal/lease"
	"github.com/pushd/pushd/internal/service"
	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/migrate"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/receipt"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
	"github.com/pushd/pushd/webhook"
)

// StoreDir is where the embedded store lives inside the data directory.
func StoreDir(data string) string { return filepath.Join(data, "store") }

// parts are what the roles share, built once by Build.
type parts struct {
	cfg   *Config
	opts  Options
	log   *zap.Logger
	reg   *telemetry.Registry
	store store.Store
	// pebble is the embedded store when --store pebble (queue/embedded shares its DB).
	pebble *pebble.Store
	// queue is the durable log (embedded or Kafka).
	queue queue.Log
	// sims are the in-process gateway simulators of --sim, else nil.
	sims *sims
	// gateway is the own channel's device endpoint when this node runs the gateway role.
	gateway *direct.Server
	core    *direct.Core // the gateway role's own-channel core: fan-out's presence (own_first)
	// owner is this process's name as a lease holder (internal/lease), set by the first keeper.
	owner string
	// hooks sends the delivery events of the fanout and gateway roles (webhooks).
	hooks *webhook.Dispatcher
	// inflight counts the API's requests in hand; the fanout worker gives way while there are.
	inflight api.InFlight
}

// webhooks returns the node's delivery-event dispatcher, adding it to g the first time: before
// the roles that emit, so that it stops after them.
func (p *parts) webhooks(g *service.Group) *webhook.Dispatcher {
	if p.hooks == nil {
		p.hooks = webhook.New(p.cfg.Webhook, p.store, p.log, p.reg.Add(metrics.NewSet()))
		g.Add("webhook", p.hooks)
	}
	return p.hooks
}

// Hooks let a caller observe a running node. nil in production.
type Hooks struct {
	// Ready is called once the API listens, with its bound address.
	Ready func(addr string)
	// GatewayReady is called once the gateway role's device endpoint listens.
	GatewayReady func(addr string)
}

// Options are what a node gets from its caller besides the Config.
type Options struct {
	Logger *zap.Logger
	// Stdout receives what a dev node prints (the simulators' addresses); nil discards it.
	Stdout io.Writer
	Hooks  *Hooks
	// Store, when set, is the node's store instead of the one Config.Store opens; the caller
	// opens and closes it (the nodes of the multi-node harness share one standing for
	// Cassandra). A *pebble.Store also gets the embedded store's sweepers.
	Store store.Store
	// KafkaDial, when set, opens every connection of the Kafka log (kafka.Config.Dial).
	KafkaDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// PrepareStore runs once the store is open, before the log and the roles (pushd serve
	// --dev creates the dev app there).
	PrepareStore func(ctx context.Context, st store.Store) error
	// DevApp returns the app that --sim gives the simulators' credentials.
	DevApp func(ctx context.Context, st store.Store) (push.App, error)
}

// Node is one assembled node: its services in start order and its metrics.
type Node struct {
	g   service.Group
	reg *telemetry.Registry
	p   *parts
}

// Build opens the store and the log of cfg and wires its roles; Run runs them. On error
// everything Build opened is closed again.
func Build(ctx context.Context, cfg *Config, opts Options) (*Node, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	p := &parts{cfg: cfg, opts: opts, log: opts.Logger, reg: telemetry.NewRegistry(true)}
	n := &Node{reg: p.reg, p: p}
	g := &n.g
	if err := openStore(ctx, p, g); err != nil {
		return nil, err
	}
	// closeStore closes the store on an error path, unless the caller owns it.
	closeStore := func() {
		if opts.Store == nil {
			_ = p.store.Close()
		}
	}
	if opts.PrepareStore != nil {
		if err := opts.PrepareStore(ctx, p.store); err != nil {
			closeStore()
			return nil, err
		}
	}
	if err := openQueue(ctx, p, g); err != nil {
		closeStore()
		return nil, err
	}
	if cfg.Sim {
		if err := startSims(ctx, p, g, opts.Stdout); err != nil {
			_ = p.queue.Close()
			closeStore()
			return nil, err
		}
	}
	for _, role := range []struct {
		name string
		add  func(*parts, *service.Group, *Hooks) error
	}{
		{"scheduler", addScheduler},
		{"fanout", addFanout},
		{"gateway", addGateway},
		{"api", addAPI}, // last: started when everything it feeds runs, stopped first
	} {
		if !cfg.Has(role.name) {
			continue
		}
		if err := role.add(p, g, opts.Hooks); err != nil {
			_ = p.queue.Close()
			closeStore()
			return nil, fmt.Errorf("cannot set up role %s: %w", role.name, err)
		}
	}
	return n, nil
}

// Add appends a service to the node's group: it starts after the roles and stops before them.
func (n *Node) Add(name string, s service.Service) { n.g.Add(name, s) }

// Names lists the node's services in start order.
func (n *Node) Names() []string { return n.g.Names() }

// Registry is the node's metrics, as /metrics writes them.
func (n *Node) Registry() *telemetry.Registry { return n.reg }

// Embedded is the embedded store when the node runs on Pebble, else nil.
func (n *Node) Embedded() *pebble.Store { return n.p.pebble }

// Run starts the services in order and, once ctx ends, stops them in reverse (service.Group).
func (n *Node) Run(ctx context.Context) error { return n.g.Run(ctx) }

// importerOf is the admin API's installation import: the embedded store's (migrate), none on
// Cassandra.
func importerOf(p *parts) api.InstallationImporter {
	if p.pebble == nil {
		return nil
	}
	return migrate.Importer{St: p.pebble}
}

// openStore opens the configured store and adds a service that closes it on stop (added
// first, so it stops last) and, for the embedded store, the sweeper of inactive installations
// and old push records (Cassandra expires both by TTL instead).
func openStore(ctx context.Context, p *parts, g *service.Group) error {
	if p.opts.Store != nil {
		// The caller's store: it opens and closes it (the nodes of a test share one).
		p.store = p.opts.Store
		p.pebble, _ = p.opts.Store.(*pebble.Store)
		return addSweeper(p, g)
	}
	switch p.cfg.Store {
	case "pebble":
		opts := p.cfg.Pebble
		opts.Logger = p.log.Named("pebble")
		st, err := pebble.Open(StoreDir(p.cfg.Data), opts)
		if err != nil {
			return fmt.Errorf("cannot open store: %w", err)
		}
		p.store, p.pebble = st, st
	case "cassandra":
		if err := openCassandra(ctx, p); err != nil {
			return err
		}
	}
	st := p.store
	g.Add("store", service.Func(func(ctx context.Context) error {
		<-ctx.Done()
		if err := st.Close(); err != nil {
			return fmt.Errorf("cannot close store: %w", err)
		}
		return nil
	}))
	return addSweeper(p, g)
}

// addSweeper adds, for the embedded store, the sweeper of inactive installations and old
// push records.
func addSweeper(p *parts, g *service.Group) error {
	if p.pebble != nil {
		// Once per cluster, under a lease. (One process opens a Pebble store, so the lease is
		// always this node's today; the gate keeps the sweep once per cluster if a shared
		// store ever needs one.)
		set := p.reg.Add(metrics.NewSet())
		k := p.keeper("sweeper", set)
		g.Add("sweeper-lease", k)
		g.Add("sweeper", api.NewSweeper(api.SweeperConfig{Interval: p.cfg.SweepEvery, Leader: k.Leader}, p.pebble, p.log, set))
	}
	return nil
}

// addGateway wires the gateway role (own-channel device connections, sender/direct): the
// connect endpoint, then the consumer of push.direct (stopped first: no message is taken
// while the connections close).
func addGateway(p *parts, g *service.Group, hooks *Hooks) error {
	set := p.reg.Add(metrics.NewSet())
	cfg := p.cfg.Direct
	cfg.Addr = p.cfg.GatewayAddr
	core := direct.NewCore(cfg, p.store, p.log, set)
	p.core = core
	// Presence for the presence endpoint (api.RegisterPresence) and own_first in a cluster
	// (direct.Presence), with either store.
	if p.owner == "" {
		p.owner = lease.Owner()
	}
	core.SetPresence(p.store, p.owner)
	core.SetEvents(p.webhooks(g))
	cluster := p.cfg.Log == "kafka"
	if cluster {
		// Several gateway nodes share push.direct: each serves the devices of the
		// partitions it owns, and advertises them for the routers (below).
		core.Cluster(p.queue.Partitions(queue.TopicDirect))
	}
	srv := direct.NewServer(cfg, core, p.store, p.store, p.log, set)
	p.gateway = srv
	var svc service.Service = srv
	if hooks != nil && hooks.GatewayReady != nil {
		svc = gatewayHook{srv, hooks.GatewayReady}
	}
	g.Add("gateway", svc)
	if st := p.pebble; st != nil {
		// Cassandra's offline rows expire by TTL; the embedded store's are swept, once per
		// cluster under a lease like the other sweeper.
		every, log := p.cfg.SweepEvery, p.log.Named("direct")
		k := p.keeper("offline-sweeper", set)
		g.Add("offline-sweeper-lease", k)
		g.Add("offline-sweeper", service.Func(func(ctx context.Context) error {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-tick.C:
				}
				if !k.Leader() {
					continue
				}
				for { // in rounds, so that a large backlog never holds one long iterator
					n, err := st.SweepOffline(ctx, time.Now(), 10_000)
					if err != nil {
						if ctx.Err() == nil {
							log.Warn("cannot sweep the offline cache", zap.Error(err))
						}
						break
					}
					if n < 10_000 {
						break
					}
				}
			}
		}))
	}
	lg := p.queue
	g.Add("gateway-consumer", service.Func(func(ctx context.Context) error { return core.Consume(ctx, lg) }))
	if cluster {
		// Added after the consumer, so stopped before it: the routers stop sending devices
		// here before the consumer leaves the group and this node's devices are moved.
		if p.owner == "" {
			p.owner = lease.Owner()
		}
		adv := direct.NewAdvertiser(core, p.store, p.owner, p.cfg.GatewayAdvertise, p.cfg.GatewayAdvertiseTTL, p.log)
		g.Add("gateway-advertiser", service.Func(adv.Run))
	}
	return nil
}

// gatewayHook tells a test the bound address once the gateway listens.
type gatewayHook struct {
	*direct.Server
	ready func(addr string)
}

func (h gatewayHook) Start(ctx context.Context) error {
	if err := h.Server.Start(ctx); err != nil {
		return err
	}
	h.ready(h.Server.Addr().String())
	return nil
}

// addAPI wires the REST API.
func addAPI(p *parts, g *service.Group, hooks *Hooks) error {
	set := p.reg.Add(metrics.NewSet())
	srv, err := api.New(api.Config{
		Addr:       p.cfg.Addr,
		PublicURL:  p.cfg.PublicURL,
		AdminToken: p.cfg.AdminToken,
		DrainDelay: p.cfg.DrainDelay,
	}, api.Deps{
		Apps:                 p.store,
		Installations:        p.store,
		Logger:               p.log,
		Metrics:              set,
		WriteMetrics:         p.reg.WritePrometheus,
		CredentialValidators: credentialValidators(),
		Importer:             importerOf(p),
		InFlight:             &p.inflight,
	})
	if err != nil {
		return err
	}
	if err := registerPush(p, srv, set); err != nil {
		return err
	}
	if err := console.Register(srv); err != nil {
		return fmt.Errorf("cannot serve the console: %w", err)
	}
	_, port, _ := net.SplitHostPort(p.cfg.GatewayAddr)
	gw := p.gateway
	rc := api.RouterConfig{URL: p.cfg.GatewayURL, TTL: p.cfg.Direct.WithDefaults().RouterTTL, Port: func() string {
		if gw != nil && gw.Addr() != nil { // this node's gateway, once it listens
			_, bound, _ := net.SplitHostPort(gw.Addr().String())
			return bound
		}
		return port
	}}
	if p.cfg.Log == "kafka" { // a cluster: the gateway node owning the device, from the registry
		rc.Gateways, rc.Partitions = p.store, p.queue.Partitions(queue.TopicDirect)
	}
	srv.RegisterRouter(rc)
	srv.RegisterReceipts(receipt.New(receipt.Config{InvalidGuard: p.cfg.Sender.WithDefaults().InvalidGuard},
		p.store, invalidator{p.store}, p.webhooks(g), p.log, set))
	pc := api.PresenceConfig{Store: p.store} // either store records presence
	if p.core != nil {
		pc.Local = p.core
	}
	if p.cfg.Log == "kafka" {
		pc.Gateways = p.store
	}
	srv.RegisterPresence(pc)
	if p.cfg.AdminToken == "" {
		p.log.Info("admin API disabled: set PUSHD_ADMIN_TOKEN to enable /admin/")
	}
	var svc service.Service = srv
	if hooks != nil && hooks.Ready != nil {
		svc = readyHook{srv, hooks.Ready}
	}
	g.Add("api", svc)
	return nil
}

// readyHook tells a test the bound address once the API listens.
type readyHook struct {
	*api.Server
	ready func(addr string)
}

func (h readyHook) Start(ctx context.Context) error {
	if err := h.Server.Start(ctx); err != nil {
		return err
	}
	h.ready(h.Server.Addr().String())
	return nil
}
