// Package clustertest runs a pushd cluster inside one test process: N complete nodes, each
// assembled by internal/node exactly as `pushd serve` assembles one (its own roles, Kafka
// clients, listeners and metrics), against ONE in-process Kafka cluster (kfake: real consumer
// groups, real rebalancing) and ONE shared store instance standing for Cassandra (Pebble,
// opened once), sending to the APNs and FCM simulators of loadtest/sim over real HTTP/2. The
// simulators' per-token counts are the ledger a scenario checks: every token exactly once, or
// at least once with the duplicates counted.
//
// A node can join at any time (Start), pause (Pause: every store call it makes waits, as a
// process stalled by the runtime or cut from Cassandra would) and be stopped abruptly (Kill):
// its Kafka connections and its connections to the simulators (each node reaches them through
// its own proxy) are cut and no new one opens, its store calls fail from then on, and its
// roles are cancelled without a graceful drain reaching Kafka, the store or a gateway.
package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/pushapi"
	"github.com/pushd/pushd/fanout"
	"github.com/pushd/pushd/internal/node"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/scheduler"
	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/store/pebble"
)

// Options shape a cluster; zero values take the defaults noted.
type Options struct {
	// Partitions per topic; default jobs 4, tasks 12, direct 2 (small: rebalances settle fast).
	Partitions map[string]int
	// SessionTimeout of the Kafka consumer groups: how long a killed node's partitions stall
	// before the group moves them; default 2s.
	SessionTimeout time.Duration
	// Configure, if set, adjusts every node's config after the harness filled it.
	Configure func(*node.Config)
	// Verbose logs the nodes at info level on t.Log; by default only their errors.
	// CLUSTERTEST_VERBOSE=1 sets it for every cluster.
	Verbose bool
	// Record keeps up to this many accepted notifications per simulator, each with the
	// connection it came on, so that Cluster.SentBy can tell which node delivered what.
	Record int
}

// Cluster is the shared part of a simulated cluster: Kafka, the store, the simulators and
// one app with credentials for them.
type Cluster struct {
	t     testing.TB
	opts  Options
	Kafka *kfake.Cluster
	Store *pebble.Store
	APNs  *sim.APNs
	FCM   *sim.FCM
	App   push.App
	ca    string // PEM file trusting both simulators (--gateway-ca)

	mu    sync.Mutex
	nodes []*Node
}

// Names of the simulated credentials.
const (
	keyID   = "CLUSTERKEY"
	teamID  = "CLUSTERTEAM"
	topic   = "com.example.cluster"
	project = "pushd-cluster"
)

// New starts Kafka, opens the store, starts the simulators and creates the app. Everything
// stops when t ends (nodes first).
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Partitions == nil {
		o.Partitions = map[string]int{queue.TopicJobs: 4, queue.TopicTasks: 12, queue.TopicDirect: 2}
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = 2 * time.Second
	}
	if os.Getenv("CLUSTERTEST_VERBOSE") != "" {
		o.Verbose = true
	}
	c := &Cluster{t: t, opts: o}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatalf("cannot start kfake: %v", err)
	}
	t.Cleanup(kc.Close)
	c.Kafka = kc
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatalf("cannot open the shared store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c.Store = st
	a, err := sim.NewAPNs(sim.APNsConfig{Record: o.Record})
	if err != nil {
		t.Fatalf("cannot start the APNs simulator: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	f, err := sim.NewFCM(sim.FCMConfig{Record: o.Record})
	if err != nil {
		t.Fatalf("cannot start the FCM simulator: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	c.APNs, c.FCM = a, f
	c.ca = filepath.Join(t.TempDir(), "sims.pem")
	if err := os.WriteFile(c.ca, append(append([]byte{}, a.CertPEM()...), f.CertPEM()...), 0o600); err != nil {
		t.Fatal(err)
	}
	c.App = c.createApp()
	// Stop the nodes before the shared parts above (cleanups run last-in first-out).
	t.Cleanup(c.stopAll)
	return c
}

// createApp creates the app every scenario pushes to, with simulator credentials and no
// daily volume limit to speak of.
func (c *Cluster) createApp() push.App {
	t := c.t
	ctx := context.Background()
	name := "cluster"
	app, perr, err := api.CreateApp(ctx, c.Store, api.AppRequest{Name: &name}, time.Now())
	if perr != nil || err != nil {
		t.Fatalf("cannot create the app: %v %v", perr, err)
	}
	p8, err := c.APNs.NewKey(keyID, teamID)
	if err != nil {
		t.Fatal(err)
	}
	apnsCred, err := json.Marshal(apns.CredentialsJSON{DefaultTopic: topic, Teams: []apns.TeamKey{{TeamID: teamID, KeyID: keyID, P8: string(p8)}}})
	if err != nil {
		t.Fatal(err)
	}
	fcmCred, err := c.FCM.NewServiceAccount(project)
	if err != nil {
		t.Fatal(err)
	}
	app.Credentials = map[string]json.RawMessage{"apns": apnsCred, "fcm": fcmCred}
	app.Settings.DailyVolume = 1 << 40
	app.Settings.Edition = push.EditionInternational // FCM is an international channel
	app.UpdatedAt = time.Now().UTC()
	if err := c.Store.PutApp(ctx, app); err != nil {
		t.Fatal(err)
	}
	return app
}

// SetCallsPerMinute sets the app's push call limit (the spec's 600 by default).
func (c *Cluster) SetCallsPerMinute(n int) {
	ctx := context.Background()
	app, err := c.Store.GetApp(ctx, c.App.ID)
	if err != nil {
		c.t.Fatal(err)
	}
	app.Settings.CallsPerMinute = n
	if err := c.Store.PutApp(ctx, app); err != nil {
		c.t.Fatal(err)
	}
	c.App = app
}

// Seed writes n installations, half iOS (APNs) and half Android (FCM), and returns their
// device tokens: the ledger's keys.
func (c *Cluster) Seed(n int) []string {
	now := time.Now().UnixMilli()
	tokens := make([]string, 0, n)
	insts := make([]push.Installation, 0, n)
	for i := range n {
		oid := fmt.Sprintf("inst%07d", i)
		var r push.Route
		var doc string
		if i%2 == 0 {
			tok := fmt.Sprintf("%064x", i)
			r = push.Route{ObjectID: oid, DeviceType: push.DeviceIOS, DeviceToken: tok, APNsTopic: topic, UpdatedAt: now}
			doc = fmt.Sprintf(`{"objectId":%q,"deviceType":"ios","deviceToken":%q,"apnsTopic":%q}`, oid, tok, topic)
			tokens = append(tokens, tok)
		} else {
			reg := fmt.Sprintf("fcm-reg-%07d", i)
			r = push.Route{ObjectID: oid, DeviceType: push.DeviceAndroid, Vendor: push.ChannelFCM, RegistrationID: reg, UpdatedAt: now}
			doc = fmt.Sprintf(`{"objectId":%q,"deviceType":"android","vendor":"fcm","registrationId":%q}`, oid, reg)
			tokens = append(tokens, reg)
		}
		insts = append(insts, push.Installation{Route: r, CreatedAt: now, Doc: []byte(doc)})
	}
	if err := c.Store.SeedInstallations(c.App.ID, c.App.Settings.Buckets, insts); err != nil {
		c.t.Fatalf("cannot seed %d installations: %v", n, err)
	}
	return tokens
}

// Delivered is the ledger: accepted notifications per device token, both simulators.
func (c *Cluster) Delivered() map[string]int64 {
	out := map[string]int64{}
	for _, st := range []sim.Stats{c.APNs.Stats(), c.FCM.Stats()} {
		for tok, n := range st.PerToken {
			out[tok] += n
		}
	}
	return out
}

// SentBy is the ledger of one node: the notifications the simulators accepted from n per
// device token, whether or not n read their answers (what n delivered, up to the cut of a
// Kill). It needs Options.Record above the number of deliveries of the test.
func (c *Cluster) SentBy(n *Node) map[string]int64 {
	out := map[string]int64{}
	for _, ss := range [][]sim.Sent{c.APNs.Sent(), c.FCM.Sent()} {
		for _, s := range ss {
			for _, p := range n.gw {
				if p.dialed(s.Peer) {
					out[s.Target]++
					break
				}
			}
		}
	}
	return out
}

// Tally compares the ledger with tokens: how many got nothing, and how many extra copies
// were delivered in all. Tokens not in the list count as extra.
func (c *Cluster) Tally(tokens []string, times int64) (lost, dups int64) {
	got := c.Delivered()
	for _, tok := range tokens {
		n := got[tok]
		if n < times {
			lost += times - n
		} else {
			dups += n - times
		}
		delete(got, tok)
	}
	for _, n := range got {
		dups += n
	}
	return lost, dups
}

// config is a node's config: the defaults of `pushd serve` (each part's flag defaults), the
// Kafka log on the shared cluster, the store given by the harness, and the gateways pointed
// at the simulators through the node's own proxies (apnsURL, fcmURL).
func (c *Cluster) config(roles []string, apnsURL, fcmURL string) *node.Config {
	cfg := &node.Config{
		Addr: "127.0.0.1:0", Data: c.t.TempDir(), Store: "pebble", Log: "kafka", Roles: roles,
		SweepEvery: time.Hour, LogTrimEvery: 30 * time.Second, RedriveAfter: scheduler.DefaultRedriveAfter,
		KafkaBrokers: c.Kafka.ListenAddrs(),
		// The OAuth2 token endpoint stays direct: the simulator checks the assertion's
		// audience against its own URL, and no delivery goes that way.
		APNsEndpoint: apnsURL, FCMEndpoint: fcmURL, FCMTokenURL: c.FCM.TokenURL(), GatewayCA: c.ca,
		GatewayAddr: "127.0.0.1:0",
	}
	fs := flag.NewFlagSet("clustertest", flag.ContinueOnError)
	cfg.Lease.RegisterFlags(fs, "lease-")
	cfg.Kafka.RegisterFlags(fs, "kafka-")
	cfg.Pebble.RegisterFlags(fs, "pebble-")
	cfg.Planner = fanout.DefaultPlannerConfig()
	cfg.Planner.RegisterFlags(fs, "fanout-")
	cfg.Worker = fanout.DefaultWorkerConfig()
	cfg.Worker.RegisterFlags(fs, "fanout-")
	cfg.Sender.RegisterFlags(fs, "sender-")
	cfg.DryRun = pushapi.DefaultDryRunConfig()
	cfg.DryRun.RegisterFlags(fs, "dry-run-")
	cfg.Direct.RegisterFlags(fs, "direct-")
	cfg.Direct.Addr = cfg.GatewayAddr
	// Test timings: a group notices a dead member after SessionTimeout, rebalances settle in
	// a fraction of a second.
	k := &cfg.Kafka
	k.Partitions, k.ReplicationFactor = c.opts.Partitions, 1
	k.HeartbeatInterval, k.SessionTimeout, k.RebalanceTimeout = 100*time.Millisecond, c.opts.SessionTimeout, c.opts.SessionTimeout
	k.JoinGroupBackoff, k.MaxWait, k.MinBackoff, k.MaxBackoff = 100*time.Millisecond, 100*time.Millisecond, time.Millisecond, 50*time.Millisecond
	if c.opts.Configure != nil {
		c.opts.Configure(cfg)
	}
	return cfg
}

// Node is one running node of the cluster.
type Node struct {
	Name string
	// API is the base URL of its API, if it runs the api role.
	API string
	// GatewayURL is the connect URL it advertises, if started by StartGateway.
	GatewayURL string
	n          *node.Node
	net        *cutter
	st         *gatedStore
	// gw are the node's paths to the simulators (APNs, FCM).
	gw []*gatewayProxy

	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// Start builds a node with roles (default api,fanout,scheduler) through internal/node and
// runs it; it returns once its API listens.
func (c *Cluster) Start(name string, roles ...string) *Node {
	c.t.Helper()
	return c.start(name, nil, roles...)
}

// start is Start with adjust, when set, changing the node's config last.
func (c *Cluster) start(name string, adjust func(*node.Config), roles ...string) *Node {
	t := c.t
	t.Helper()
	if len(roles) == 0 {
		roles = []string{"api", "fanout", "scheduler"}
	}
	apnsGW, apnsURL := newGatewayProxy(t, c.APNs.URL())
	fcmGW, fcmURL := newGatewayProxy(t, c.FCM.URL())
	cfg := c.config(roles, apnsURL, fcmURL)
	if adjust != nil {
		adjust(cfg)
	}
	nd := &Node{Name: name, net: &cutter{conns: map[*cutConn]struct{}{}}, st: &gatedStore{Store: c.Store, g: newGate()},
		gw: []*gatewayProxy{apnsGW, fcmGW}, done: make(chan error, 1)}
	ready := make(chan string, 1)
	level := zapcore.ErrorLevel
	if c.opts.Verbose {
		level = zapcore.InfoLevel
	}
	logger := zaptest.NewLogger(t, zaptest.Level(level)).Named(name)
	n, err := node.Build(context.Background(), cfg, node.Options{
		Logger:    logger,
		Store:     nd.st,
		KafkaDial: nd.net.dial,
		Hooks:     &node.Hooks{Ready: func(addr string) { ready <- addr }},
	})
	if err != nil {
		t.Fatalf("cannot build node %s: %v", name, err)
	}
	nd.n = n
	ctx, cancel := context.WithCancel(context.Background())
	nd.cancel = cancel
	go func() { nd.done <- n.Run(ctx) }()
	c.mu.Lock()
	c.nodes = append(c.nodes, nd)
	c.mu.Unlock()
	if cfg.Has("api") {
		select {
		case addr := <-ready:
			nd.API = "http://" + addr
		case err := <-nd.done:
			t.Fatalf("node %s stopped before its API listened: %v", name, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("node %s: the API did not listen within 30s", name)
		}
	}
	return nd
}

// Metrics writes the node's /metrics.
func (n *Node) Metrics() string {
	var b bytes.Buffer
	n.n.Registry().WritePrometheus(&b)
	return b.String()
}

// Kill stops the node abruptly: its Kafka connections and its connections to the simulators
// are cut (and no new one opens), every store call it makes fails from now on, then its roles
// are cancelled. Nothing it does after the cut reaches Kafka, the store or a gateway: no offset
// commit, no checkpoint, no leaving the group (the coordinator waits out the session timeout,
// as for a dead process), no delivery. A request the simulator answered just before the cut
// counts as delivered even if the node never read the answer, as with a real crash.
func (n *Node) Kill() {
	n.net.cut()
	for _, p := range n.gw {
		p.cut()
	}
	n.st.g.kill()
	n.cancel()
}

// Pause stalls the node: every store call it makes (lease renewals, claims, checkpoints,
// scans) waits until Resume. Its Kafka connections stay up.
func (n *Node) Pause() { n.st.g.pause() }

// PauseAt pauses the node at its next call of the named store method (only
// "ClaimScheduled" is armed: the scheduler's claim of a due push, the worst moment for a
// lease holder to stall), before the call reaches the store; the channel is closed then.
func (n *Node) PauseAt(call string) <-chan struct{} { return n.st.g.pauseAt(call) }

// Resume ends a Pause.
func (n *Node) Resume() { n.st.g.resume() }

// Stop stops the node gracefully and returns what Run returned.
func (n *Node) Stop() error {
	n.cancel()
	return n.wait()
}

func (n *Node) wait() error {
	n.once.Do(func() {
		select {
		case n.err = <-n.done:
		case <-time.After(60 * time.Second):
			n.err = errors.New("node did not stop within 60s")
		}
	})
	return n.err
}

// stopAll stops every node still running and waits for them; a killed node's error is the
// expected consequence of its cut and is not reported.
func (c *Cluster) stopAll() {
	c.mu.Lock()
	nodes := c.nodes
	c.mu.Unlock()
	for _, n := range nodes {
		n.Resume()
		n.cancel()
	}
	for _, n := range nodes {
		err := n.wait()
		if err != nil && !n.st.g.isDead() {
			c.t.Errorf("node %s: %v", n.Name, err)
		}
	}
}

// cutter dials the node's Kafka connections and can cut them all at once.
type cutter struct {
	d     net.Dialer
	mu    sync.Mutex
	down  bool
	conns map[*cutConn]struct{}
}

var errCut = errors.New("clustertest: node is cut off")

func (c *cutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	down := c.down
	c.mu.Unlock()
	if down {
		return nil, errCut
	}
	conn, err := c.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := &cutConn{Conn: conn, c: c}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		_ = conn.Close()
		return nil, errCut
	}
	c.conns[cc] = struct{}{}
	return cc, nil
}

func (c *cutter) cut() {
	c.mu.Lock()
	c.down = true
	conns := c.conns
	c.conns = map[*cutConn]struct{}{}
	c.mu.Unlock()
	for cc := range conns {
		_ = cc.Conn.Close()
	}
}

type cutConn struct {
	net.Conn
	c *cutter
}

func (cc *cutConn) Close() error {
	cc.c.mu.Lock()
	delete(cc.c.conns, cc)
	cc.c.mu.Unlock()
	return cc.Conn.Close()
}
