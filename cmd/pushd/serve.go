package main

import (
	"context"
	"flag"
	"io"
	"os"

	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/internal/gctune"
	"github.com/pushd/pushd/internal/node"
	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// storeDir is where the embedded store lives inside the data directory.
func storeDir(data string) string { return node.StoreDir(data) }

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
	opts := node.Options{
		Logger: log,
		Stdout: stdout,
		DevApp: func(ctx context.Context, st store.Store) (push.App, error) { return devApp(ctx, st, cfg.Data) },
	}
	if cfg.Dev {
		opts.PrepareStore = func(ctx context.Context, st store.Store) error { return ensureDevApp(ctx, st, cfg.Data, stdout) }
	}
	if hooks != nil {
		opts.Hooks = &node.Hooks{Ready: hooks.ready, GatewayReady: hooks.gatewayReady}
	}
	n, err := node.Build(ctx, cfg, opts)
	if err != nil {
		return err
	}
	if n.Embedded() != nil {
		spareProc(log)
	}
	if tu := gctune.Start(cfg.GCHeadroom, os.Getenv("GOGC")); tu != nil {
		defer tu.Stop()
		log.Info("GC headroom set: the heap may grow this far above the live heap before a collection (GOGC in the environment overrides)",
			zap.Uint64("bytes", cfg.GCHeadroom))
	}
	if cfg.OpsAddr != "" {
		// Added last, so stopped first: readiness turns false before any role stops. Next to
		// the api role, whose own drain follows, a second wait would only double the stop.
		ops := &opsServer{addr: cfg.OpsAddr, drainDelay: cfg.DrainDelay, reg: n.Registry(), log: log, pprof: cfg.Pprof}
		if cfg.Has("api") {
			ops.drainDelay = 0
		}
		if hooks != nil {
			ops.bound, ops.endDrain = hooks.opsReady, hooks.opsEndDrain
		}
		n.Add("ops", ops)
	}
	log.Info("pushd starting", zap.Strings("roles", cfg.Roles), zap.String("store", cfg.Store),
		zap.String("log", cfg.Log), zap.Strings("services", n.Names()))
	err = n.Run(ctx)
	if err != nil {
		log.Error("pushd stopped with an error", zap.Error(err))
		return err
	}
	log.Info("pushd stopped")
	return nil
}
