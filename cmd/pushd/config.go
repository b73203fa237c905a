package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/api/pushapi"
	"github.com/pushd/pushd/fanout"
	"github.com/pushd/pushd/internal/node"
	"github.com/pushd/pushd/scheduler"
	"github.com/pushd/pushd/sender/direct"
)

// serveConfig is everything `pushd serve` reads (node.Config: the node runs it). Each flag
// has a PUSHD_* environment equivalent (flag name upper-cased, '-' → '_'); a flag given on
// the command line wins.
type serveConfig = node.Config

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
	fs.DurationVar(&c.LogTrimEvery, "log-trim-every", envDuration("PUSHD_LOG_TRIM_EVERY", 30*time.Second), "interval of the embedded log's trim of the messages every consumer group committed (PUSHD_LOG_TRIM_EVERY)")
	fs.StringVar(&c.LogLevel, "log-level", envOr("PUSHD_LOG_LEVEL", ""), "debug|info|warn|error; default info, debug with --dev (PUSHD_LOG_LEVEL)")
	fs.StringVar(&c.PublicURL, "public-url", envOr("PUSHD_PUBLIC_URL", ""), "base URL of Location headers, e.g. https://push.example.com; default http://<Host> (PUSHD_PUBLIC_URL)")
	fs.StringVar(&c.ReceiptURL, "receipt-url", envOr("PUSHD_RECEIPT_URL", ""), "base URL the vendors (mi, vivo, oppo, mz) post delivery receipts to, e.g. https://push.example.com; empty: no receipts asked (with --sim: this node's API on 127.0.0.1) (PUSHD_RECEIPT_URL)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", envDuration("PUSHD_DRAIN_DELAY", 0), "on stop, keep serving this long with readiness false before closing the listener (PUSHD_DRAIN_DELAY)")
	fs.DurationVar(&c.SweepEvery, "sweep-every", envDuration("PUSHD_SWEEP_EVERY", time.Hour), "interval of the sweeper of inactive installations and old push records (PUSHD_SWEEP_EVERY)")
	fs.DurationVar(&c.RedriveAfter, "redrive-after", envDuration("PUSHD_REDRIVE_AFTER", scheduler.DefaultRedriveAfter), "scheduler role: append again the job of a push record the planner has not taken after this long, e.g. after a crash between the record and its job (PUSHD_REDRIVE_AFTER)")
	c.Lease.RegisterFlags(fs, "lease-")
	var brokers string
	fs.StringVar(&brokers, "kafka-brokers", envOr("PUSHD_KAFKA_BROKERS", ""), "Kafka seed brokers host:port, comma separated, for --log kafka (PUSHD_KAFKA_BROKERS)")
	c.Kafka.RegisterFlags(fs, "kafka-")
	c.Cassandra.RegisterFlags(fs, "cassandra-")
	c.Pebble.RegisterFlags(fs, "pebble-")
	c.Planner = fanout.DefaultPlannerConfig()
	c.Planner.RegisterFlags(fs, "fanout-")
	c.Worker = fanout.DefaultWorkerConfig()
	c.Worker.RegisterFlags(fs, "fanout-")
	c.Deferrals = fanout.DefaultDeferralsConfig()
	c.Deferrals.RegisterFlags(fs, "fanout-")
	c.Sender.RegisterFlags(fs, "sender-")
	c.DryRun = pushapi.DefaultDryRunConfig()
	c.DryRun.RegisterFlags(fs, "dry-run-")
	fs.StringVar(&c.GatewayAddr, "gateway-addr", ":8090", "listen address of the own channel's device connections, gateway role (PUSHD_GATEWAY_ADDR)")
	fs.StringVar(&c.GatewayURL, "gateway-url", "", "URL the router (GET /1.1/router) gives devices, e.g. wss://push.example.com/1.1/connect; empty: ws://<the host asked>:<gateway port>/1.1/connect (PUSHD_GATEWAY_URL)")
	fs.StringVar(&c.GatewayAdvertise, "gateway-advertise", "", "with --log kafka: this gateway node's own connect URL, which the routers give the devices of the partitions it owns, e.g. wss://gw-1.push.example.com/1.1/connect; empty: ws://<hostname>:<gateway port>/1.1/connect (PUSHD_GATEWAY_ADVERTISE)")
	fs.DurationVar(&c.GatewayAdvertiseTTL, "gateway-advertise-ttl", direct.DefaultAdvertiseTTL, "with --log kafka: how long a gateway node's advertisement lasts without its heartbeat (every third of it); a node that died is routed to until then (PUSHD_GATEWAY_ADVERTISE_TTL)")
	c.Direct.RegisterFlags(fs, "direct-")
	c.Webhook.RegisterFlags(fs, "webhook-")
	fs.StringVar(&c.APNsEndpoint, "apns-endpoint", envOr("PUSHD_APNS_ENDPOINT", ""), "APNs base URL for both environments instead of Apple's (PUSHD_APNS_ENDPOINT)")
	fs.StringVar(&c.FCMEndpoint, "fcm-endpoint", envOr("PUSHD_FCM_ENDPOINT", ""), "FCM base URL instead of Google's (PUSHD_FCM_ENDPOINT)")
	fs.StringVar(&c.FCMTokenURL, "fcm-token-url", envOr("PUSHD_FCM_TOKEN_URL", ""), "OAuth2 token URL for every FCM service account instead of its token_uri (PUSHD_FCM_TOKEN_URL)")
	fs.StringVar(&c.GatewayCA, "gateway-ca", envOr("PUSHD_GATEWAY_CA", ""), "PEM file of extra roots trusted for gateway TLS (PUSHD_GATEWAY_CA)")
	fs.StringVar(&c.HMSEndpoint, "hms-endpoint", envOr("PUSHD_HMS_ENDPOINT", ""), "HMS Push Kit base URL instead of Huawei's, for credentials that name none (PUSHD_HMS_ENDPOINT)")
	fs.StringVar(&c.HMSTokenURL, "hms-token-url", envOr("PUSHD_HMS_TOKEN_URL", ""), "HMS OAuth2 token URL instead of Huawei's, for credentials that name none (PUSHD_HMS_TOKEN_URL)")
	fs.StringVar(&c.HonorEndpoint, "honor-endpoint", envOr("PUSHD_HONOR_ENDPOINT", ""), "Honor Push base URL instead of https://push-api.cloud.honor.com, for credentials that name none (PUSHD_HONOR_ENDPOINT)")
	fs.StringVar(&c.HonorTokenURL, "honor-token-url", envOr("PUSHD_HONOR_TOKEN_URL", ""), "Honor OAuth2 token URL instead of https://iam.developer.honor.com/auth/token, for credentials that name none (PUSHD_HONOR_TOKEN_URL)")
	fs.StringVar(&c.MiEndpoint, "mi-endpoint", envOr("PUSHD_MI_ENDPOINT", ""), "Xiaomi push base URL instead of the region's, for credentials that name none (PUSHD_MI_ENDPOINT)")
	fs.StringVar(&c.VivoEndpoint, "vivo-endpoint", envOr("PUSHD_VIVO_ENDPOINT", ""), "vivo push base URL instead of vivo's, for credentials that name none (PUSHD_VIVO_ENDPOINT)")
	fs.StringVar(&c.OppoEndpoint, "oppo-endpoint", envOr("PUSHD_OPPO_ENDPOINT", ""), "OPPO push China base URL instead of OPPO's, for credentials that name none (PUSHD_OPPO_ENDPOINT)")
	fs.StringVar(&c.OppoIntlURL, "oppo-intl-endpoint", envOr("PUSHD_OPPO_INTL_ENDPOINT", ""), "OPPO push overseas base URL instead of OPPO's, for credentials that name none (PUSHD_OPPO_INTL_ENDPOINT)")
	fs.StringVar(&c.OppoInvalidRegIDCodes, "oppo-invalid-regid-codes", envOr("PUSHD_OPPO_INVALID_REGID_CODES", ""), "comma list of OPPO business codes (10000-20000) that mean a dead regId and delete its installation; OPPO's are unconfirmed, so none by default (PUSHD_OPPO_INVALID_REGID_CODES)")
	fs.StringVar(&c.MzEndpoint, "mz-endpoint", envOr("PUSHD_MZ_ENDPOINT", ""), "Meizu push base URL instead of https://api-push.meizu.com, for credentials that name none (PUSHD_MZ_ENDPOINT)")
	fs.BoolVar(&c.Sim, "sim", envBool("PUSHD_SIM", false), "run the gateway simulators (APNs, FCM and the vendors with a driver) in-process and point the dev app at them; needs --dev (PUSHD_SIM)")
	fs.StringVar(&c.SimAPNsAddr, "sim-apns-addr", envOr("PUSHD_SIM_APNS_ADDR", "127.0.0.1:2197"), "listen address of the in-process APNs simulator (PUSHD_SIM_APNS_ADDR)")
	fs.StringVar(&c.SimFCMAddr, "sim-fcm-addr", envOr("PUSHD_SIM_FCM_ADDR", "127.0.0.1:2198"), "listen address of the in-process FCM simulator (PUSHD_SIM_FCM_ADDR)")
	fs.StringVar(&c.SimMiAddr, "sim-mi-addr", envOr("PUSHD_SIM_MI_ADDR", "127.0.0.1:2200"), "listen address of the in-process Xiaomi simulator (PUSHD_SIM_MI_ADDR)")
	fs.StringVar(&c.SimMzAddr, "sim-mz-addr", envOr("PUSHD_SIM_MZ_ADDR", "127.0.0.1:2205"), "listen address of the in-process Meizu simulator (PUSHD_SIM_MZ_ADDR)")
	fs.StringVar(&c.SimHMSAddr, "sim-hms-addr", envOr("PUSHD_SIM_HMS_ADDR", "127.0.0.1:2199"), "listen address of the in-process HMS simulator (PUSHD_SIM_HMS_ADDR)")
	fs.Float64Var(&c.SimReceiptUninstalled, "sim-receipt-uninstalled", envFloat("PUSHD_SIM_RECEIPT_UNINSTALLED", 0), "share (0..1) of accepted tokens the in-process vendor simulators report uninstalled in their receipts (PUSHD_SIM_RECEIPT_UNINSTALLED)")
	fs.StringVar(&c.SimHonorAddr, "sim-honor-addr", envOr("PUSHD_SIM_HONOR_ADDR", "127.0.0.1:2206"), "listen address of the in-process Honor simulator (PUSHD_SIM_HONOR_ADDR)")
	fs.StringVar(&c.SimVivoAddr, "sim-vivo-addr", envOr("PUSHD_SIM_VIVO_ADDR", "127.0.0.1:2203"), "listen address of the in-process vivo simulator (PUSHD_SIM_VIVO_ADDR)")
	fs.StringVar(&c.SimOppoAddr, "sim-oppo-addr", envOr("PUSHD_SIM_OPPO_ADDR", "127.0.0.1:2204"), "listen address of the in-process OPPO simulator, both regions (PUSHD_SIM_OPPO_ADDR)")
	fs.StringVar(&c.OpsAddr, "ops-addr", envOr("PUSHD_OPS_ADDR", ""), "listen address of /metrics, /healthz and /readyz for nodes without the api role (PUSHD_OPS_ADDR)")
	fs.BoolVar(&c.Pprof, "pprof", envBool("PUSHD_PPROF", false), "serve Go's profiler at /debug/pprof/ on --ops-addr; off by default (PUSHD_PPROF)")
	fs.Uint64Var(&c.GCHeadroom, "gc-headroom", 64<<20, "bytes Go's heap may grow above the live heap before a collection, when GOGC alone would collect sooner; 0 leaves it to GOGC, as does GOGC set in the environment (PUSHD_GC_HEADROOM)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := applyEnv(fs); err != nil {
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
	if err := validateDurations(c); err != nil {
		return nil, err
	}
	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			c.KafkaBrokers = append(c.KafkaBrokers, b)
		}
	}
	if c.Log == "kafka" && len(c.KafkaBrokers) == 0 {
		return nil, fmt.Errorf("--log kafka needs --kafka-brokers (or PUSHD_KAFKA_BROKERS)")
	}
	if err := c.Kafka.ValidateTimings(); err != nil {
		return nil, fmt.Errorf("--kafka-heartbeat-interval, --kafka-session-timeout, --kafka-rebalance-timeout: %w", err)
	}
	if c.Store == "cassandra" {
		if err := c.Cassandra.Validate(); err != nil {
			return nil, fmt.Errorf("--store cassandra: %w (set --cassandra-hosts or PUSHD_CASSANDRA_HOSTS)", err)
		}
	}
	if err := c.Pebble.Validate(); err != nil {
		return nil, err
	}
	if err := c.Lease.Validate(); err != nil {
		return nil, fmt.Errorf("--lease-renew, --lease-ttl: %w", err)
	}
	if err := c.Planner.Validate(); err != nil {
		return nil, err
	}
	if err := c.Worker.Validate(); err != nil {
		return nil, err
	}
	if err := c.Deferrals.Validate(); err != nil {
		return nil, fmt.Errorf("--fanout-deferred-every, --fanout-deferred-batch: %w", err)
	}
	if err := c.DryRun.Validate(); err != nil {
		return nil, fmt.Errorf("--dry-run-timeout, --dry-run-concurrency: %w", err)
	}
	c.Direct.Addr = c.GatewayAddr
	if err := c.Direct.Validate(); err != nil {
		return nil, err
	}
	if u := c.ReceiptURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return nil, fmt.Errorf("--receipt-url %q must start with http:// or https://", u)
	}
	if r := c.SimReceiptUninstalled; r < 0 || r > 1 {
		return nil, fmt.Errorf("--sim-receipt-uninstalled %v must be within 0..1", r)
	}
	if err := c.Webhook.Validate(); err != nil {
		return nil, err
	}
	_, gwPort, err := net.SplitHostPort(c.GatewayAddr)
	if err != nil {
		return nil, fmt.Errorf("--gateway-addr %q: %w", c.GatewayAddr, err)
	}
	if c.GatewayAdvertiseTTL < 300*time.Millisecond {
		return nil, fmt.Errorf("--gateway-advertise-ttl %s is below 300ms", shortDuration(c.GatewayAdvertiseTTL))
	}
	if c.Log == "kafka" && c.Has("gateway") {
		if c.GatewayAdvertise, err = advertiseURL(c.GatewayAdvertise, gwPort); err != nil {
			return nil, err
		}
	}
	if c.Pprof && c.OpsAddr == "" {
		return nil, fmt.Errorf("--pprof needs --ops-addr: the profiler is served on the ops port only")
	}
	if c.Sim && !c.Dev {
		return nil, fmt.Errorf("--sim needs --dev: the simulators are wired to the dev app")
	}
	if c.Sim && (c.APNsEndpoint != "" || c.FCMEndpoint != "" || c.HMSEndpoint != "" || c.MiEndpoint != "" || c.VivoEndpoint != "" ||
		c.OppoEndpoint != "" || c.OppoIntlURL != "" || c.MzEndpoint != "") {
		return nil, fmt.Errorf("--sim sets the gateway endpoints itself: drop --apns-endpoint/--fcm-endpoint/--hms-endpoint/--mi-endpoint/--vivo-endpoint/--oppo-endpoint/--oppo-intl-endpoint/--mz-endpoint")
	}
	if c.Sim && (c.HonorEndpoint != "" || c.HonorTokenURL != "") {
		return nil, fmt.Errorf("--sim sets the gateway endpoints itself: drop --honor-endpoint/--honor-token-url")
	}
	if c.Sim && c.ReceiptURL == "" {
		c.ReceiptURL = simReceiptURL(c.Addr)
	}
	if err := removedTransports(); err != nil {
		return nil, err
	}
	if err := c.Sender.APNs.Validate(); err != nil {
		return nil, err
	}
	if err := c.Sender.FCM.Validate(); err != nil {
		return nil, err
	}
	codes, err := parseCodes(c.OppoInvalidRegIDCodes)
	if err != nil {
		return nil, fmt.Errorf("--oppo-invalid-regid-codes: %w", err)
	}
	c.Sender.Oppo.InvalidRegIDCodes = codes
	if err := c.Sender.Oppo.Validate(); err != nil {
		return nil, fmt.Errorf("--oppo-invalid-regid-codes: %w", err)
	}
	return c, nil
}

// advertiseURL checks --gateway-advertise, giving it the path /1.1/connect when it has none;
// empty, it is ws://<hostname>:<port>/1.1/connect.
func advertiseURL(v, port string) (string, error) {
	if v == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			return "", fmt.Errorf("--log kafka with the gateway role needs --gateway-advertise: the hostname is unknown (%v)", err)
		}
		if port == "0" {
			return "", fmt.Errorf("--log kafka with the gateway role needs --gateway-advertise when --gateway-addr has port 0")
		}
		return "ws://" + net.JoinHostPort(host, port) + "/1.1/connect", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--gateway-advertise %q: want ws://host[:port][/1.1/connect] or wss://…", v)
	}
	switch u.Path {
	case "", "/":
		u.Path = "/1.1/connect"
	case "/1.1/connect":
	default:
		return "", fmt.Errorf("--gateway-advertise %q: the path must be /1.1/connect (or none)", v)
	}
	return u.String(), nil
}

// validateDurations refuses durations that cannot mean anything, instead of letting a part
// replace them with its default unseen (the sweeper runs hourly on an interval ≤ 0, the
// Cassandra driver waits 5s on a timeout of 0).
func validateDurations(c *serveConfig) error {
	if c.DrainDelay < 0 {
		return fmt.Errorf("--drain-delay must not be negative, got %s (0: no delay)", shortDuration(c.DrainDelay))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--sweep-every", c.SweepEvery},
		{"--log-trim-every", c.LogTrimEvery},
		{"--redrive-after", c.RedriveAfter},
		{"--lease-ttl", c.Lease.TTL},
		{"--lease-renew", c.Lease.Renew},
		{"--cassandra-timeout", c.Cassandra.Timeout},
		{"--sender-retry-horizon", c.Sender.RetryHorizon},
		{"--sender-max-backoff", c.Sender.MaxBackoff},
	} {
		if d.v <= 0 {
			return fmt.Errorf("%s must be positive, got %s", d.flag, shortDuration(d.v))
		}
	}
	return nil
}

// shortDuration is d as a user writes it: -1h, not -1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// applyEnv gives every flag that is not on the command line the value of its environment
// variable, PUSHD_ and the flag name upper-cased with '-' as '_' (--fanout-batch-size is
// PUSHD_FANOUT_BATCH_SIZE). A value that does not parse is an error, not a silent default.
func applyEnv(fs *flag.FlagSet) error {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || onCommandLine[f.Name] {
			return
		}
		name := envName(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment %s=%q: %w", name, v, serr)
			}
		}
	})
	return err
}

// envName is the environment variable of a flag.
func envName(flagName string) string {
	return "PUSHD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("pushd serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseCodes reads a comma list of integer codes ("" is none).
func parseCodes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// removedTransports refuses a start that asks, through the environment, for an HTTP/2 client
// pushd no longer has: PUSHD_APNS_TRANSPORT=apns2 or PUSHD_FCM_TRANSPORT=std meant the
// previous clients, removed once sender/h2 had proven itself (docs/decisions.md, "Lean APNs
// transport"). Their flags are gone, so a flag is refused as any unknown one; the environment
// would otherwise be ignored without a word. "lean", the only transport, is accepted.
func removedTransports() error {
	for _, name := range []string{"PUSHD_APNS_TRANSPORT", "PUSHD_FCM_TRANSPORT"} {
		if v := os.Getenv(name); v != "" && v != "lean" {
			return fmt.Errorf("%s=%s: that HTTP/2 client was removed; sender/h2 (\"lean\") is the only one, unset %s", name, v, name)
		}
	}
	return nil
}
