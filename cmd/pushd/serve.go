package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/console"
	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/internal/lease"
	"github.com/pushd/pushd/internal/service"
	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
)

// storeDir is where the embedded store lives inside the data directory.
func storeDir(data string) string { return filepath.Join(data, "store") }

// parts are what the roles share, built once by serve.
type parts struct {
	cfg   *serveConfig
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
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer, hooks *testHooks) error {
	fs := flag.NewFlagSet("pushd serve", flag.ContinueOnError)
	var cfg *serveConfig
	ok, err := parseHelpAware(fs, stdout, stderr, func() (err error) {
		cfg, err = parseServeFlags(args, fs)
		return err
	})
	if !ok {
		return err
	}
	log, err := telemetry.NewLogger(telemetry.LoggerConfig{Dev: cfg.Dev, Level: cfg.LogLevel})
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if err := faultpoint.Check(); err != nil {
		return err
	}
	if fp := faultpoint.Armed(); fp != "" {
		log.Warn("a fault point is armed: this process kills itself there (tests only)", zap.String("faultpoint", fp))
	}
	p := &parts{cfg: cfg, log: log, reg: telemetry.NewRegistry(true)}

	var g service.Group
	if err := openStore(ctx, p, &g); err != nil {
		return err
	}
	// From here on the group owns closing the store: every error path runs the group.
	if cfg.Dev {
		if err := ensureDevApp(ctx, p.store, cfg.Data, stdout); err != nil {
			_ = p.store.Close()
			return err
		}
	}
	if err := openQueue(ctx, p, &g); err != nil {
		_ = p.store.Close()
		return err
	}
	if cfg.Sim {
		if err := startSims(ctx, p, &g, stdout); err != nil {
			_ = p.queue.Close()
			_ = p.store.Close()
			return err
		}
	}
	for _, role := range []struct {
		name string
		add  func(*parts, *service.Group, *testHooks) error
	}{
		{"scheduler", addScheduler},
		{"fanout", addFanout},
		{"gateway", addGateway},
		{"api", addAPI}, // last: started when everything it feeds runs, stopped first
	} {
		if !cfg.has(role.name) {
			continue
		}
		if err := role.add(p, &g, hooks); err != nil {
			_ = p.store.Close()
			return fmt.Errorf("cannot set up role %s: %w", role.name, err)
		}
	}
	if cfg.OpsAddr != "" {
		// Added last, so stopped first: readiness turns false before any role stops. Next to
		// the api role, whose own drain follows, a second wait would only double the stop.
		ops := &opsServer{addr: cfg.OpsAddr, drainDelay: cfg.DrainDelay, reg: p.reg, log: p.log, pprof: cfg.Pprof}
		if cfg.has("api") {
			ops.drainDelay = 0
		}
		if hooks != nil {
			ops.bound, ops.endDrain = hooks.opsReady, hooks.opsEndDrain
		}
		g.Add("ops", ops)
	}
	log.Info("pushd starting", zap.Strings("roles", cfg.Roles), zap.String("store", cfg.Store),
		zap.String("log", cfg.Log), zap.Strings("services", g.Names()))
	err = g.Run(ctx)
	if err != nil {
		log.Error("pushd stopped with an error", zap.Error(err))
		return err
	}
	log.Info("pushd stopped")
	return nil
}

// openStore opens the configured store and adds a service that closes it on stop (added
// first, so it stops last) and, for the embedded store, the sweeper of inactive installations
// and old push records (Cassandra expires both by TTL instead).
func openStore(ctx context.Context, p *parts, g *service.Group) error {
	switch p.cfg.Store {
	case "pebble":
		opts := p.cfg.Pebble
		opts.Logger = p.log.Named("pebble")
		st, err := pebble.Open(storeDir(p.cfg.Data), opts)
		if err != nil {
			return fmt.Errorf("cannot open store: %w", err)
		}
		p.store, p.pebble = st, st
		spareProc(p.log)
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
func addGateway(p *parts, g *service.Group, hooks *testHooks) error {
	set := p.reg.Add(metrics.NewSet())
	cfg := p.cfg.Direct
	cfg.Addr = p.cfg.GatewayAddr
	core := direct.NewCore(cfg, p.store, p.log, set)
	p.core = core
	if ps, ok := p.store.(direct.PresenceStore); ok { // the presence endpoint (api.RegisterPresence)
		if p.owner == "" {
			p.owner = lease.Owner()
		}
		core.SetPresence(ps, p.owner)
	}
	cluster := p.cfg.Log == "kafka"
	if cluster {
		// Several gateway nodes share push.direct: each serves the devices of the
		// partitions it owns, and advertises them for the routers (below).
		core.Cluster(p.queue.Partitions(queue.TopicDirect))
	}
	srv := direct.NewServer(cfg, core, p.store, p.store, p.log, set)
	p.gateway = srv
	var svc service.Service = srv
	if hooks != nil && hooks.gatewayReady != nil {
		svc = gatewayHook{srv, hooks.gatewayReady}
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
func addAPI(p *parts, g *service.Group, hooks *testHooks) error {
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
	if ps, ok := p.store.(api.PresenceReader); ok {
		pc := api.PresenceConfig{Store: ps}
		if p.core != nil {
			pc.Local = p.core
		}
		if p.cfg.Log == "kafka" {
			pc.Gateways = p.store
		}
		srv.RegisterPresence(pc)
	}
	if p.cfg.AdminToken == "" {
		p.log.Info("admin API disabled: set PUSHD_ADMIN_TOKEN to enable /admin/")
	}
	var svc service.Service = srv
	if hooks != nil && hooks.ready != nil {
		svc = readyHook{srv, hooks.ready}
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
