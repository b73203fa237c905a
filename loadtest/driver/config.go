package driver

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/sender/fcm"
)

// Scenario names, in the order they run.
const (
	ScenarioChannel      = "channel"       // POST /1.1/push with channels: one known channel
	ScenarioWhere        = "where"         // POST /1.1/push with a where on a custom field: full scan + residual filter
	ScenarioDevices      = "devices"       // POST /1.1/push/devices, iOS tokens and FCM registration ids, 500 per call
	ScenarioInvalid      = "invalid"       // channel push to a cohort with dead tokens: invalidTokens counted, installations deleted
	ScenarioInvalidAgain = "invalid-again" // the same push again: the deleted installations are no longer targets
	ScenarioAll          = "all"           // channel push to the whole main population (not run by default: make profile's push)
	ScenarioKill         = "kill"          // channel push to the whole main population, pushd SIGKILLed and restarted mid-push (-kill-at)
	ScenarioDirect       = "direct"        // channel push to own-channel devices of both protocols, some offline until it is done
	ScenarioMixed        = "mixed"         // one channel push reaching apns, the own channel and every vendor with a driver
	ScenarioQuotaFill    = "quota-fill"    // channel push to as many vivo devices as the simulator's day quota: all sent
	ScenarioQuota        = "quota"         // then a short-lived push to more: parked on the spent quota, failed at expiry
)

// AllScenarios lists the scenarios --pushes accepts.
var AllScenarios = []string{ScenarioChannel, ScenarioWhere, ScenarioDevices, ScenarioInvalid, ScenarioAll, ScenarioKill, ScenarioDirect, ScenarioMixed, ScenarioQuota}

// Sim is one simulator whose GET /_stats the driver reads. Name is the delivery channel it
// plays ("apns" or "fcm"); "" means unknown (its counts are only checked merged with the others).
type Sim struct {
	Name string
	URL  string
}

// Config is what one load-test run needs. Zero values take the defaults noted.
type Config struct {
	PushdURL   string // base URL of pushd's REST API (http://127.0.0.1:port)
	AdminToken string // PUSHD_ADMIN_TOKEN of that pushd
	Sims       []Sim  // simulators to read stats from
	SimDir     string // pushsim's -dir: AuthKey_<keyid>.p8, service-account.json, ca.pem

	Installations   int     // main population, default 20,000
	IOSFraction     float64 // share of iOS installations (the rest are FCM Android); the flag's default is 0.5, and 0 means Android only
	Concurrency     int     // installation upserts in flight, default 128
	SeedImport      bool    // seed through the bulk import (JSON lines) instead of upserts
	Pushes          []string
	Timeout         time.Duration // the whole run, default 10 minutes
	PollEvery       time.Duration // push record polling, default 50 ms
	InvalidCohort   int           // installations of the invalid-token cohort; 0: Installations/10, at least 20
	DeadFraction    float64       // share of the invalid cohort with dead tokens, default 0.2
	DevicesPerType  int           // ids listed per device type in the devices scenario, default 500
	APNsKeyID       string        // default: from the one AuthKey_<id>.p8 in SimDir
	APNsTeamID      string        // default SIMTEAM001 (pushsim's default)
	Topic           string        // apnsTopic of iOS installations and the credential's default topic
	SimInvalidRate  float64       // pushsim -invalid-token-rate: which tokens the sims answer as dead
	SimSeed         uint64        // pushsim -seed
	AppName         string        // name of the app the run creates; default loadtest-<run id>
	ProgressEvery   time.Duration // progress lines while a push runs or installations are seeded, default 1 s
	RequestDeadline time.Duration // per HTTP request, default 30 s
	// KillAt is the share of the kill scenario's audience the simulators must have accepted
	// before the driver SIGKILLs pushd (the process in PushdPIDFile); whoever started pushd
	// (scripts/loadtest.sh) restarts it on the same data and writes the new pid there.
	KillAt       float64
	PushdPIDFile string
	// The own-channel and mixed scenarios (a second, China edition app): own-channel devices
	// of the direct scenario (default 200: each is a connection in the driver and in pushd, and
	// the open-file limit is shared), the share of own-channel devices offline until the push
	// is done (default 0.2), and devices per channel of the mixed scenario (default 50).
	DirectDevices   int
	DirectOffline   float64
	MixedPerChannel int
	// The quota scenario: devices of its short-lived push beyond the simulator's day quota
	// (default 30; the quota itself is pushsim's --vivo-quota-profile, read from its -dir),
	// and that push's expiration_interval (default 3 s).
	QuotaDevices int
	QuotaExpiry  time.Duration

	// Terminal, when not nil, is where the seeding's progress bar (rate, ETA) is redrawn in
	// place: the command's stderr when it is a terminal. nil: a plain progress line in the
	// run's output every ProgressEvery.
	Terminal io.Writer
	// SampleEvery is how often pushd's process (from /proc, by the pid in PushdPIDFile) and
	// the simulators' counts are sampled, default 100 ms.
	SampleEvery time.Duration
	// SettleTimeout bounds the wait, after the seed, for pushd to go quiet before the
	// scenarios (settle.go); 0: no wait.
	SettleTimeout time.Duration
	// The floor, measured after the scenarios against the APNs simulator: the h2load binary
	// ("" skips it), the Go floor binary (loadtest/cmd/h2floor; "" skips it), the requests
	// (0: the compared scenario's APNs deliveries, at least 2,000), connections (default 2)
	// and requests in flight per connection (default 100).
	FloorH2load      string
	FloorGo          string
	FloorRequests    int
	FloorConnections int
	FloorStreams     int
	// ProfileDir receives CPU and allocation profiles of each scenario's push, read from
	// PprofURL (pushd's --ops-addr, pushd started with --pprof); "" profiles nothing.
	ProfileDir string
	PprofURL   string
	// LatencyCompare, when positive, runs the all scenario a second time with this latency
	// added to every simulator answer (POST /_latency) and reports both rates and their ratio.
	LatencyCompare time.Duration
	// LatencyFloorAPNsConns and LatencyFloorFCMConns are the connections of the latency
	// comparison's h2load runs: pushd's budget for each gateway (defaults: its defaults).
	LatencyFloorAPNsConns int
	LatencyFloorFCMConns  int
}

// RegisterFlags registers the driver flags on fs, writing into c. pushes receives --pushes
// (comma separated); sims receives --sim-stats.
func (c *Config) RegisterFlags(fs *flag.FlagSet, pushes, sims *string) {
	fs.StringVar(&c.PushdURL, "pushd", "http://127.0.0.1:8080", "base URL of pushd's REST API")
	fs.StringVar(&c.AdminToken, "admin-token", "", "pushd admin token (PUSHD_ADMIN_TOKEN); default: $PUSHD_ADMIN_TOKEN")
	fs.StringVar(sims, "sim-stats", "", "comma-separated simulator URLs whose GET /_stats is read, each optionally named: apns=https://...,fcm=https://...")
	fs.StringVar(&c.SimDir, "sim-dir", "", "pushsim -dir: holds AuthKey_<keyid>.p8, service-account.json and ca.pem")
	fs.IntVar(&c.Installations, "installations", 20000, "installations to seed (main population)")
	fs.Float64Var(&c.IOSFraction, "ios-fraction", 0.5, "share of iOS installations; the rest are Android on FCM")
	fs.IntVar(&c.Concurrency, "concurrency", 128, "installation upserts in flight")
	fs.BoolVar(&c.SeedImport, "seed-import", false, "seed the installations through the bulk import (POST /admin/apps/<id>/installations/import, JSON lines), far faster than one upsert each")
	fs.StringVar(pushes, "pushes", "", "comma-separated scenarios among "+strings.Join(AllScenarios, ",")+
		" (default: all; invalid only when -sim-invalid-rate > 0)")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Minute, "bound on the whole run")
	fs.IntVar(&c.InvalidCohort, "invalid-installations", 0, "installations of the invalid-token cohort (0: installations/10, at least 20)")
	fs.Float64Var(&c.DeadFraction, "dead-fraction", 0.2, "share of the invalid-token cohort whose tokens the simulators answer as dead")
	fs.IntVar(&c.DevicesPerType, "devices-per-type", 500, "device ids listed per device type in the devices scenario (500 per call)")
	fs.StringVar(&c.APNsKeyID, "apns-key-id", "", "key id of the .p8 pushsim wrote (default: from the AuthKey_<id>.p8 file name)")
	fs.StringVar(&c.APNsTeamID, "apns-team-id", "SIMTEAM001", "team id pushsim registered the key for")
	fs.StringVar(&c.Topic, "topic", "com.pushd.loadtest", "APNs topic (bundle id) of the iOS installations")
	fs.Float64Var(&c.SimInvalidRate, "sim-invalid-rate", 0, "the -invalid-token-rate pushsim runs with (needed by the invalid scenario)")
	fs.Uint64Var(&c.SimSeed, "sim-seed", 1, "the -seed pushsim runs with")
	fs.StringVar(&c.AppName, "app-name", "", "name of the app to create (default loadtest-<run id>)")
	fs.Float64Var(&c.KillAt, "kill-at", 0, "kill scenario: SIGKILL pushd once the simulators accepted this share of its audience, e.g. 0.3 (needs -pushd-pid-file and a supervisor that restarts pushd)")
	fs.IntVar(&c.DirectDevices, "direct-devices", 200, "own-channel devices of the direct scenario, half on each protocol (each is an open connection: mind the open-file limit)")
	fs.Float64Var(&c.DirectOffline, "direct-offline", 0.2, "share of own-channel devices that connect only once the push is done (its offline cache delivers to them)")
	fs.IntVar(&c.MixedPerChannel, "mixed-per-channel", 50, "devices per delivery channel of the mixed scenario ("+strings.Join(MixedChannels, ", ")+")")
	fs.IntVar(&c.QuotaDevices, "quota-devices", 30, "quota scenario: devices of the push sent once the vivo simulator's day quota (pushsim --vivo-quota-profile) is spent")
	fs.DurationVar(&c.QuotaExpiry, "quota-expiry", 3*time.Second, "quota scenario: expiration_interval of the push sent on the spent quota (its targets fail when it expires)")
	fs.DurationVar(&c.SettleTimeout, "settle-timeout", 2*time.Minute, "after the seed, wait up to this long for pushd's CPU to fall below 5% of a core (its flushes and compactions of the seed) before the scenarios, so the first is not billed for them; 0: no wait")
	fs.DurationVar(&c.SampleEvery, "sample-every", 100*time.Millisecond, "how often pushd's CPU and memory (from /proc, by -pushd-pid-file) and the simulators' counts are sampled")
	fs.StringVar(&c.FloorH2load, "floor-h2load", "", "h2load binary for the floor (Debian nghttp2-client); empty: no h2load floor")
	fs.StringVar(&c.FloorGo, "floor-go", "", "the Go floor binary (go build ./loadtest/cmd/h2floor); empty: no Go floor")
	fs.IntVar(&c.FloorRequests, "floor-requests", 0, "requests each floor tool sends (0: the compared scenario's APNs deliveries, at least 2,000 and at most 200,000)")
	fs.IntVar(&c.FloorConnections, "floor-connections", 2, "HTTP/2 connections of each floor tool")
	fs.IntVar(&c.FloorStreams, "floor-streams", 100, "requests in flight per connection of each floor tool")
	fs.DurationVar(&c.LatencyCompare, "latency-compare", 0, "run the all scenario again with this latency added to every simulator answer (e.g. 20ms) and report both rates and their ratio (default -pushes: all)")
	fs.IntVar(&c.LatencyFloorAPNsConns, "latency-floor-apns-connections", apns.DefaultMaxConns, "connections of the latency comparison's h2load run against APNs: pushd's APNs connection budget")
	fs.IntVar(&c.LatencyFloorFCMConns, "latency-floor-fcm-connections", fcm.DefaultMaxConns, "connections of the latency comparison's h2load run against FCM: pushd's FCM connection budget")
	fs.StringVar(&c.ProfileDir, "profile-dir", "", "write CPU and allocation profiles of each scenario's push here (needs -pprof-url)")
	fs.StringVar(&c.PprofURL, "pprof-url", "", "base URL of pushd's ops port, pushd started with --pprof (http://127.0.0.1:port)")
	fs.StringVar(&c.PushdPIDFile, "pushd-pid-file", "", "file holding the pid of the running pushd (rewritten by its supervisor after a restart)")
}

// ParseSims parses --sim-stats: comma-separated [name=]url.
func ParseSims(s string) ([]Sim, error) {
	var out []Sim
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var sim Sim
		if name, u, ok := strings.Cut(part, "="); ok && !strings.Contains(name, "/") {
			sim = Sim{Name: name, URL: u}
		} else {
			sim = Sim{URL: part}
		}
		if p, err := url.Parse(sim.URL); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return nil, fmt.Errorf("invalid -sim-stats entry %q: want [name=]https://host:port", part)
		}
		sim.URL = strings.TrimRight(sim.URL, "/")
		out = append(out, sim)
	}
	return out, nil
}

// ParsePushes parses --pushes; "" selects every scenario, invalid only when invalidRate > 0,
// or only the kill scenario when killAt > 0.
func ParsePushes(s string, invalidRate, killAt float64) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		if killAt > 0 {
			return []string{ScenarioKill}, nil
		}
		out := []string{ScenarioChannel, ScenarioWhere, ScenarioDevices}
		if invalidRate > 0 {
			out = append(out, ScenarioInvalid)
		}
		return append(out, ScenarioDirect, ScenarioMixed, ScenarioQuota), nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(AllScenarios, p) {
			return nil, fmt.Errorf("unknown scenario %q in -pushes (known: %s)", p, strings.Join(AllScenarios, ","))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (c *Config) withDefaults() Config {
	out := *c
	if out.Installations == 0 {
		out.Installations = 20000
	}
	if out.Concurrency <= 0 {
		out.Concurrency = 128
	}
	if out.Timeout <= 0 {
		out.Timeout = 10 * time.Minute
	}
	if out.PollEvery <= 0 {
		out.PollEvery = 50 * time.Millisecond
	}
	if out.InvalidCohort <= 0 {
		out.InvalidCohort = max(out.Installations/10, 20)
	}
	if out.DeadFraction == 0 {
		out.DeadFraction = 0.2
	}
	if out.DevicesPerType <= 0 {
		out.DevicesPerType = 500
	}
	if out.APNsTeamID == "" {
		out.APNsTeamID = "SIMTEAM001"
	}
	if out.Topic == "" {
		out.Topic = "com.pushd.loadtest"
	}
	if out.ProgressEvery <= 0 {
		out.ProgressEvery = time.Second
	}
	if out.DirectDevices <= 0 {
		out.DirectDevices = 200
	}
	if out.DirectOffline == 0 {
		out.DirectOffline = 0.2
	}
	if out.MixedPerChannel <= 0 {
		out.MixedPerChannel = 50
	}
	if out.QuotaDevices <= 0 {
		out.QuotaDevices = 30
	}
	if out.QuotaExpiry <= 0 {
		out.QuotaExpiry = 3 * time.Second
	}
	if out.SampleEvery <= 0 {
		out.SampleEvery = 100 * time.Millisecond
	}
	if out.FloorConnections <= 0 {
		out.FloorConnections = 2
	}
	if out.FloorStreams <= 0 {
		out.FloorStreams = 100
	}
	if out.LatencyFloorAPNsConns <= 0 {
		out.LatencyFloorAPNsConns = apns.DefaultMaxConns
	}
	if out.LatencyFloorFCMConns <= 0 {
		out.LatencyFloorFCMConns = fcm.DefaultMaxConns
	}
	if out.RequestDeadline <= 0 {
		out.RequestDeadline = 30 * time.Second
	}
	return out
}

// Validate reports a configuration the driver cannot run.
func (c *Config) Validate() error {
	var errs []error
	if p, err := url.Parse(c.PushdURL); err != nil || p.Scheme != "http" && p.Scheme != "https" || p.Host == "" {
		errs = append(errs, fmt.Errorf("-pushd %q is not an http(s) URL", c.PushdURL))
	}
	if c.AdminToken == "" {
		errs = append(errs, errors.New("-admin-token (or PUSHD_ADMIN_TOKEN) is required"))
	}
	if len(c.Sims) == 0 {
		errs = append(errs, errors.New("-sim-stats is required: the simulators' URLs"))
	}
	if c.SimDir == "" {
		errs = append(errs, errors.New("-sim-dir is required: pushsim's credentials directory"))
	}
	if c.Installations < 1 {
		errs = append(errs, errors.New("-installations must be at least 1"))
	}
	if c.IOSFraction < 0 || c.IOSFraction > 1 {
		errs = append(errs, errors.New("-ios-fraction must be within [0, 1]"))
	}
	if c.SimInvalidRate < 0 || c.SimInvalidRate >= 1 {
		errs = append(errs, errors.New("-sim-invalid-rate must be within [0, 1)"))
	}
	if c.DeadFraction <= 0 || c.DeadFraction >= 1 {
		errs = append(errs, errors.New("-dead-fraction must be within (0, 1)"))
	}
	if len(c.Pushes) == 0 {
		errs = append(errs, errors.New("no scenario selected"))
	}
	if slices.Contains(c.Pushes, ScenarioInvalid) && c.SimInvalidRate <= 0 {
		errs = append(errs, errors.New("the invalid scenario needs -sim-invalid-rate > 0, the rate pushsim runs with"))
	}
	if c.DirectOffline < 0 || c.DirectOffline >= 1 {
		errs = append(errs, errors.New("-direct-offline must be within [0, 1)"))
	}
	if c.QuotaExpiry%time.Second != 0 {
		errs = append(errs, errors.New("-quota-expiry must be whole seconds (expiration_interval)"))
	}
	if (c.ProfileDir == "") != (c.PprofURL == "") {
		errs = append(errs, errors.New("-profile-dir and -pprof-url go together"))
	}
	if c.LatencyCompare < 0 || c.LatencyCompare > 0 && !slices.Contains(c.Pushes, ScenarioAll) {
		errs = append(errs, errors.New("-latency-compare must be positive and needs the all scenario in -pushes"))
	}
	if c.KillAt < 0 || c.KillAt >= 1 {
		errs = append(errs, errors.New("-kill-at must be within [0, 1)"))
	}
	if slices.Contains(c.Pushes, ScenarioKill) && (c.KillAt <= 0 || c.PushdPIDFile == "") {
		errs = append(errs, errors.New("the kill scenario needs -kill-at > 0 and -pushd-pid-file"))
	}
	return errors.Join(errs...)
}
