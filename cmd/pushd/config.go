package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// serveConfig is everything `pushd serve` reads. Each flag has a PUSHD_* environment
// equivalent (flag name upper-cased, '-' → '_'); a flag given on the command line wins.
type serveConfig struct {
	Addr       string
	Data       string
	Store      string
	Log        string
	Roles      []string
	Dev        bool
	LogLevel   string
	AdminToken string
	PublicURL  string
	DrainDelay time.Duration
	SweepEvery time.Duration
}

var (
	knownStores = []string{"pebble", "cassandra"}
	knownLogs   = []string{"embedded", "kafka"}
	knownRoles  = []string{"api", "fanout", "scheduler", "gateway"}
)

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envBool(name string, def bool) bool {
	if v, ok := os.LookupEnv(name); ok {
		b, err := strconv.ParseBool(v)
		if err == nil {
			return b
		}
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(name); ok {
		d, err := time.ParseDuration(v)
		if err == nil {
			return d
		}
	}
	return def
}

func parseServeFlags(args []string, fs *flag.FlagSet) (*serveConfig, error) {
	c := &serveConfig{}
	var roles string
	fs.StringVar(&c.Addr, "addr", envOr("PUSHD_ADDR", ":8080"), "API listen address (PUSHD_ADDR)")
	fs.StringVar(&c.Data, "data", envOr("PUSHD_DATA", "./data"), "data directory of the embedded store and log (PUSHD_DATA)")
	fs.StringVar(&c.Store, "store", envOr("PUSHD_STORE", "pebble"), "store: pebble|cassandra (PUSHD_STORE)")
	fs.StringVar(&c.Log, "log", envOr("PUSHD_LOG", "embedded"), "durable log: embedded|kafka (PUSHD_LOG)")
	fs.StringVar(&roles, "roles", envOr("PUSHD_ROLES", strings.Join(knownRoles, ",")), "comma list of roles: api,fanout,scheduler,gateway (PUSHD_ROLES)")
	fs.BoolVar(&c.Dev, "dev", envBool("PUSHD_DEV", false), "development mode: console logs, a dev app created on first start (PUSHD_DEV)")
	fs.StringVar(&c.LogLevel, "log-level", envOr("PUSHD_LOG_LEVEL", ""), "debug|info|warn|error; default info, debug with --dev (PUSHD_LOG_LEVEL)")
	fs.StringVar(&c.PublicURL, "public-url", envOr("PUSHD_PUBLIC_URL", ""), "base URL of Location headers, e.g. https://push.example.com; default http://<Host> (PUSHD_PUBLIC_URL)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", envDuration("PUSHD_DRAIN_DELAY", 0), "on stop, keep serving this long with readiness false before closing the listener (PUSHD_DRAIN_DELAY)")
	fs.DurationVar(&c.SweepEvery, "sweep-every", envDuration("PUSHD_SWEEP_EVERY", time.Hour), "interval of the inactive-installation sweeper (PUSHD_SWEEP_EVERY)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.AdminToken = os.Getenv("PUSHD_ADMIN_TOKEN") // env only: a flag would show in ps
	for _, r := range strings.Split(roles, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(knownRoles, r) {
			return nil, fmt.Errorf("unknown role %q: want some of %s", r, strings.Join(knownRoles, ","))
		}
		if !slices.Contains(c.Roles, r) {
			c.Roles = append(c.Roles, r)
		}
	}
	if len(c.Roles) == 0 {
		return nil, fmt.Errorf("no roles given: want some of %s", strings.Join(knownRoles, ","))
	}
	if !slices.Contains(knownStores, c.Store) {
		return nil, fmt.Errorf("unknown store %q: want pebble or cassandra", c.Store)
	}
	if !slices.Contains(knownLogs, c.Log) {
		return nil, fmt.Errorf("unknown log %q: want embedded or kafka", c.Log)
	}
	if c.Data == "" {
		return nil, fmt.Errorf("--data must not be empty")
	}
	return c, nil
}

func (c *serveConfig) has(role string) bool { return slices.Contains(c.Roles, role) }

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("pushd serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
