package node

import (
	"slices"
	"time"

	"github.com/pushd/pushd/api/pushapi"
	"github.com/pushd/pushd/fanout"
	"github.com/pushd/pushd/internal/lease"
	"github.com/pushd/pushd/queue/kafka"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/store/cassandra"
	"github.com/pushd/pushd/store/pebble"
	"github.com/pushd/pushd/webhook"
)

// Config is everything a node runs with: what `pushd serve` reads from its flags and
// environment (cmd/pushd).
type Config struct {
	Addr       string
	Data       string
	Store      string
	Log        string
	Roles      []string
	Dev        bool
	LogLevel   string
	AdminToken string
	PublicURL  string
	// ReceiptURL is the base URL vendors post their delivery receipts to (this API's public
	// URL, reachable from the vendors): the mi, vivo, oppo and mz senders ask for receipts at
	// <ReceiptURL>/receipts/<vendor>/<appId>/<token> (package receipt). Empty: none asked.
	ReceiptURL string
	DrainDelay time.Duration
	SweepEvery time.Duration
	// LogTrimEvery is how often the embedded log deletes the messages every group committed.
	LogTrimEvery time.Duration
	// RedriveAfter is scheduler.RedriveConfig.After: how long a push record may hold a job the
	// planner has not taken before the scheduler role appends it again.
	RedriveAfter time.Duration
	// Lease times the cluster leases: the scheduler's (firing and re-driving) and the sweepers'.
	Lease lease.Config

	// Pebble sizes the embedded store's cache and memtables.
	Pebble pebble.Options

	// Cluster engines.
	KafkaBrokers []string
	// Kafka holds the consumer group timings (--kafka-*) and the test-only tuning of the Kafka
	// log; its Brokers, Logger, Metrics and Dial are the node's.
	Kafka     kafka.Config
	Cassandra cassandra.Config

	// Fan-out tuning.
	Planner fanout.PlannerConfig
	Worker  fanout.WorkerConfig
	// Deferrals times the re-driver of the targets a spent vendor quota deferred.
	Deferrals fanout.DeferralsConfig

	// Sender tuning: retry horizon and backoff towards the gateways.
	Sender sender.Config

	// DryRun bounds the dry runs of pushes (the dry_run extension) on the api role.
	DryRun pushapi.DryRunConfig

	// Gateways: endpoint overrides and extra trusted roots (simulators, staging).
	APNsEndpoint string
	FCMEndpoint  string
	FCMTokenURL  string
	HMSEndpoint  string
	HMSTokenURL  string
	MiEndpoint   string
	VivoEndpoint string
	OppoEndpoint string
	OppoIntlURL  string
	MzEndpoint   string
	GatewayCA    string
	// OppoInvalidRegIDCodes are OPPO's business codes of a dead regId (unconfirmed: none
	// assumed), comma-separated.
	OppoInvalidRegIDCodes string

	// Honor Push: base URL and OAuth2 token URL overrides.
	HonorEndpoint string
	HonorTokenURL string

	// Sim runs the APNs and FCM simulators in-process and points the dev app at them.
	Sim         bool
	SimAPNsAddr string
	SimFCMAddr  string
	SimHMSAddr  string
	SimMiAddr   string
	SimVivoAddr string
	SimOppoAddr string
	SimMzAddr   string

	SimHonorAddr string // the in-process Honor simulator
	// SimReceiptUninstalled is the share of accepted tokens the vendor simulators report
	// uninstalled in their receipts (sim.Knobs.ReceiptUninstalledRate).
	SimReceiptUninstalled float64

	// OpsAddr serves the ops endpoints on nodes without the api role.
	OpsAddr string
	// Pprof serves net/http/pprof's /debug/pprof/ on OpsAddr (off by default: a profile
	// costs CPU and the heap dump names internals).
	Pprof bool
	// GCHeadroom keeps Go's heap goal at least this many bytes above the live heap
	// (internal/gctune); 0, or GOGC in the environment, leaves the collector to GOGC.
	GCHeadroom uint64

	// Gateway role (own Android channel): where devices connect, the URL the router gives
	// them, and the gateway's tuning.
	GatewayAddr string
	GatewayURL  string
	// GatewayAdvertise is this node's own connect URL in a cluster (--log kafka): the routers
	// send the devices of the partitions it owns there. GatewayAdvertiseTTL is how long its
	// advertisement lasts without a heartbeat.
	GatewayAdvertise    string
	GatewayAdvertiseTTL time.Duration
	Direct              direct.Config
	// Webhook tunes the delivery-event webhooks of the fanout and gateway roles.
	Webhook webhook.Config
}

// Has tells whether the node runs role.
func (c *Config) Has(role string) bool { return slices.Contains(c.Roles, role) }
