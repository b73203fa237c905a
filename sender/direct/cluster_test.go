package direct_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/gobwas/ws"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/kafka"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/sender/direct/lcproto"
	"github.com/pushd/pushd/store/pebble"
)

// clusterParts is push.direct's partition count in the cluster tests.
const clusterParts = 8

// cluster is gateway nodes sharing one kfake cluster and one store (Pebble standing for
// Cassandra), with an API node answering both routers from the registry.
type cluster struct {
	st    *pebble.Store
	kcfg  kafka.Config
	api   string // http://host:port
	rig   *rig   // helpers over st (installation, record, tally, cached)
	nodes []*gwNode
}

// gwNode is one gateway node: its own Kafka log (a member of the group), core, connect
// endpoint and advertiser, each stoppable in the order cmd/pushd stops them.
type gwNode struct {
	name string
	core *direct.Core
	srv  *direct.Server
	url  string // ws://…/1.1/connect
	log  *kafka.Log
	stop func()
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	c := &cluster{kcfg: kafka.Config{
		Brokers:           kc.ListenAddrs(),
		Partitions:        map[string]int{queue.TopicDirect: clusterParts},
		ReplicationFactor: 1,
		HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout:    2 * time.Second,
		RebalanceTimeout:  2 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		MaxWait:           100 * time.Millisecond,
		MinBackoff:        time.Millisecond,
		MaxBackoff:        10 * time.Millisecond,
		Logger:            zap.NewNop(),
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, c.kcfg); err != nil {
		t.Fatal(err)
	}
	// The store and its app: the rig's, whose own gateway is not used.
	c.rig = newRig(t, direct.Config{})
	c.rig.stop()
	c.st = c.rig.st

	srv, err := api.New(api.Config{Addr: "127.0.0.1:0"}, api.Deps{Apps: c.st, Installations: c.st, Logger: zap.NewNop(), Metrics: metrics.NewSet()})
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterRouter(api.RouterConfig{Gateways: c.st, Partitions: clusterParts, TTL: time.Hour, Port: func() string { return "0" }})
	actx, acancel := context.WithCancel(context.Background())
	if err := srv.Start(actx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(actx) }()
	t.Cleanup(func() {
		acancel()
		<-done
	})
	c.api = "http://" + srv.Addr().String()
	return c
}

// addNode starts a gateway node.
func (c *cluster) addNode(t *testing.T, name string) *gwNode {
	t.Helper()
	lg, err := kafka.New(c.kcfg)
	if err != nil {
		t.Fatal(err)
	}
	set := metrics.NewSet()
	cfg := direct.Config{Addr: "127.0.0.1:0"}
	n := &gwNode{name: name, log: lg}
	n.core = direct.NewCore(cfg, c.st, zap.NewNop(), set)
	n.core.Cluster(lg.Partitions(queue.TopicDirect))
	n.srv = direct.NewServer(cfg, n.core, c.st, c.st, zap.NewNop(), set)
	sctx, scancel := context.WithCancel(context.Background())
	if err := n.srv.Start(sctx); err != nil {
		t.Fatal(err)
	}
	n.url = "ws://" + n.srv.Addr().String() + "/1.1/connect"
	adv := direct.NewAdvertiser(n.core, c.st, name, n.url, 5*time.Second, zap.NewNop())
	run := func(f func(context.Context) error) (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f(ctx) }()
		return cancel, done
	}
	sdone := make(chan error, 1)
	go func() { sdone <- n.srv.Run(sctx) }()
	ccancel, cdone := run(func(ctx context.Context) error { return n.core.Consume(ctx, lg) })
	acancel, adone := run(adv.Run)
	var once sync.Once
	n.stop = func() {
		once.Do(func() {
			// cmd/pushd's order: the advertiser, the consumer (its devices move), the
			// connections, the log.
			for _, s := range []struct {
				cancel context.CancelFunc
				done   chan error
			}{{acancel, adone}, {ccancel, cdone}, {scancel, sdone}} {
				s.cancel()
				if err := <-s.done; err != nil {
					t.Errorf("node %s: %v", name, err)
				}
			}
			_ = lg.Close()
		})
	}
	t.Cleanup(n.stop)
	c.nodes = append(c.nodes, n)
	return n
}

// serverFor is the URL of n a router gives d: ours /1.1/connect, the original's "/".
func (n *gwNode) serverFor(d *device) string {
	if d.lc {
		return strings.TrimSuffix(n.url, "1.1/connect")
	}
	return n.url
}

// owner is the node owning iid's partition now (nil: none).
func (c *cluster) owner(iid string) *gwNode {
	p := queue.PartitionForKey([]byte(iid), clusterParts)
	for _, n := range c.nodes {
		if slices.Contains(n.core.Owned(), p) {
			return n
		}
	}
	return nil
}

// waitSplit waits until the live nodes own disjoint sets of partitions covering all, each
// at least one, and the registry says so.
func (c *cluster) waitSplit(t *testing.T, live ...*gwNode) {
	t.Helper()
	waitfor.True(t, 30*time.Second, "the live gateway nodes to split push.direct and advertise it", func() bool {
		var all []int
		adv := map[string][]int{}
		gws, err := c.st.Gateways(context.Background(), time.Now())
		if err != nil {
			return false
		}
		for _, g := range gws {
			adv[g.Node] = g.Partitions
		}
		for _, n := range live {
			o := n.core.Owned()
			if len(o) == 0 || !slices.Equal(adv[n.name], o) {
				return false
			}
			all = append(all, o...)
		}
		slices.Sort(all)
		return len(gws) == len(live) && len(all) == clusterParts && len(slices.Compact(all)) == clusterParts
	})
}

// handoff appends message id for every iid to push.direct through the fan-out's hand-off,
// after writing its push record.
func (c *cluster) handoff(t *testing.T, lg *kafka.Log, id string, iids []string) {
	t.Helper()
	c.rig.record(t, id)
	msg := &push.Message{Channel: push.ChannelDirect, Body: []byte(`{"alert":"` + id + `"}`), Expiration: time.Now().Add(time.Hour)}
	ds := make([]push.Delivery, len(iids))
	for i, iid := range iids {
		ds[i] = push.Delivery{AppID: testApp, NotificationObjectID: id, NotificationID: "nid" + id, Message: msg,
			Target: push.Target{Channel: push.ChannelDirect, DeviceID: iid}}
	}
	res := make([]push.Result, len(ds))
	if err := direct.NewHandoff(nil, lg).Send(context.Background(), ds, res); err != nil {
		t.Fatal(err)
	}
}

// device is one simulated device of either protocol, reconnecting through its router.
type device struct {
	iid    string
	lc     bool
	ledger *sim.Ledger
	json   *sim.Device
	orig   *sim.LCDevice
	server string // the URL it is connected to
}

func (d *device) done() <-chan struct{} {
	if d.lc {
		return d.orig.Done()
	}
	return d.json.Done()
}

func (d *device) closeCode() int {
	if d.lc {
		c, _ := d.orig.CloseCode()
		return c
	}
	c, _ := d.json.CloseCode()
	return c
}

// movedSignal says whether the server sent the protocol's moved signal before closing: our
// moved frame, the original's goaway command.
func (d *device) movedSignal() bool {
	if d.lc {
		return d.orig.Goaway()
	}
	return d.json.Moved()
}

func (d *device) close() {
	if d.lc {
		d.orig.Close()
	} else {
		d.json.Close()
	}
}

// route asks the device's router where to connect.
func (c *cluster) route(ctx context.Context, d *device) (string, error) {
	if d.lc {
		return sim.RouteLC(ctx, c.api, testApp, d.iid)
	}
	return sim.Route(ctx, c.api, testApp, testKey, d.iid)
}

// dialAt connects d to server; a refusal is a *sim.RefusedError.
func dialAt(ctx context.Context, d *device, server string) error {
	cfg := sim.DeviceConfig{AppID: testApp, AppKey: testKey, InstallationID: d.iid, Ledger: d.ledger}
	var err error
	if d.lc {
		d.orig, err = sim.DialLCDeviceAt(ctx, server, sim.LCDeviceConfig{DeviceConfig: cfg})
	} else {
		d.json, _, err = sim.DialDeviceAt(ctx, server, cfg)
	}
	if err == nil {
		d.server = server
	}
	return err
}

// connect asks the router and connects, once; it says whether the device is connected, and
// why not (a refusal other than moved, or a router error, fails the test).
func (c *cluster) connect(t *testing.T, d *device) (bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	server, err := c.route(ctx, d)
	if err != nil {
		return false, err
	}
	if d.lc {
		server = strings.TrimSuffix(server, "/") + "/" // the original's router gives "/"
	}
	err = dialAt(ctx, d, server)
	var ref *sim.RefusedError
	if errors.As(err, &ref) && ref.Code != direct.CloseMoved {
		t.Fatalf("device %s refused: %v", d.iid, err)
	}
	return err == nil, err
}

// reconnect connects d through the router until a node accepts it (a device the router sent
// to a node that no longer owns it is moved, and asks again).
func (c *cluster) reconnect(t *testing.T, d *device) {
	t.Helper()
	waitfor.True(t, 30*time.Second, "device "+d.iid+" to reconnect through the router", func() bool {
		ok, _ := c.connect(t, d)
		return ok
	})
}

// clusterDevices registers n installations of each protocol whose partitions cover every
// partition, so that each node serves devices of both protocols whatever the split.
func clusterDevices(t *testing.T, c *cluster) []*device {
	t.Helper()
	var out []*device
	for _, lc := range []bool{false, true} {
		seen := map[int]bool{}
		for i := 0; len(seen) < clusterParts; i++ {
			iid := fmt.Sprintf("cl-%t-%d", lc, i)
			p := queue.PartitionForKey([]byte(iid), clusterParts)
			if seen[p] {
				continue
			}
			seen[p] = true
			c.rig.installation(t, iid, push.DeviceAndroid, "")
			out = append(out, &device{iid: iid, lc: lc, ledger: sim.NewLedger()})
		}
	}
	return out
}

// TestDirectClusterMovesDevicesToTheOwner is issue 13's cluster Done-when: two gateway nodes
// owning different push.direct partitions; both routers send every device (both protocols)
// to its owner, a node refuses a device it does not own; when one node stops, its devices get
// moved, reconnect through the router to the other, and every device receives the cached
// and the new messages exactly once, with the record's counts and arrivals exact.
func TestDirectClusterMovesDevicesToTheOwner(t *testing.T) {
	c := newCluster(t)
	a := c.addNode(t, "node-a")
	b := c.addNode(t, "node-b")
	c.waitSplit(t, a, b)
	devs := clusterDevices(t, c)
	all := make([]string, len(devs))
	for i, d := range devs {
		all[i] = d.iid
	}

	// Every device is routed to its owner at the first try, and accepted there.
	for _, d := range devs {
		ok, err := c.connect(t, d)
		if !ok {
			t.Fatalf("device %s (lc %t) not accepted at once: %v", d.iid, d.lc, err)
		}
		if own := c.owner(d.iid); own == nil || d.server != own.serverFor(d) {
			t.Fatalf("device %s (lc %t) routed to %s; its owner is %v", d.iid, d.lc, d.server, own)
		}
		defer d.close()
	}
	var onA, onB []*device
	for _, d := range devs {
		if c.owner(d.iid) == a {
			onA = append(onA, d)
		} else {
			onB = append(onB, d)
		}
	}
	// A node refuses a device of the other's partition: moved (4011) after the protocol's
	// signal, and keeps nothing attached.
	other := map[*gwNode]*gwNode{a: b, b: a}
	for _, d := range []*device{onA[0], onB[0]} {
		wrong := other[c.owner(d.iid)]
		connected := wrong.core.Connected()
		if d.lc {
			raw := dialRawLC(t, wrong.serverFor(d))
			raw.send(t, ws.OpBinary, sim.LoginCommand(testApp, d.iid))
			cmds, code, _ := raw.untilClose(t)
			if code != direct.CloseMoved || len(cmds) != 1 || cmds[0].GetCmd() != lcproto.CommandType_goaway {
				t.Errorf("original's login at the wrong node: %v then close %d; want goaway then %d", cmds, code, direct.CloseMoved)
			}
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _, err := sim.DialDeviceAt(ctx, wrong.url, sim.DeviceConfig{AppID: testApp, AppKey: testKey, InstallationID: d.iid})
			cancel()
			var ref *sim.RefusedError
			if !errors.As(err, &ref) || ref.Code != direct.CloseMoved {
				t.Errorf("connect at the wrong node: %v; want close %d", err, direct.CloseMoved)
			}
		}
		if got := wrong.core.Connected(); got != connected {
			t.Errorf("the wrong node attached the refused device: %d connections, had %d", got, connected)
		}
	}

	// m1 to every device, online: written and acked by each owner.
	c.handoff(t, a.log, "m1", all)
	waitfor.True(t, 20*time.Second, "m1 to arrive at every device", func() bool { return c.rig.tally(t, "m1").Arrivals == int64(len(devs)) })

	// Half of node a's devices go offline (one of each protocol at least); m2 is cached for
	// them and written live to the others.
	var offline, online []*device
	for i, d := range onA {
		if i%2 == 0 || (d.lc && !slices.ContainsFunc(offline, func(o *device) bool { return o.lc })) {
			d.close()
			offline = append(offline, d)
		} else {
			online = append(online, d)
		}
	}
	if !slices.ContainsFunc(online, func(o *device) bool { return true }) {
		t.Fatalf("no device of node a stays online: %d devices on a", len(onA))
	}
	waitfor.True(t, 10*time.Second, "the offline devices to detach", func() bool {
		return a.core.Connected() == len(onA)-len(offline)
	})
	c.handoff(t, b.log, "m2", all)
	waitfor.True(t, 20*time.Second, "m2 to be sent to all and to arrive at the online devices", func() bool {
		tl := c.rig.tally(t, "m2")
		return tl.Sent == int64(len(devs)) && tl.Arrivals == int64(len(devs)-len(offline))
	})
	for _, d := range offline {
		if got := c.rig.cached(t, d.iid); !slices.Equal(got, []string{"m2"}) {
			t.Fatalf("cache of offline device %s = %v, want [m2]", d.iid, got)
		}
	}

	// Node a stops: its online devices are moved (signal, then 4011) and reconnect through
	// the router to b; the offline ones come back through the router to b too.
	a.stop()
	for _, d := range online {
		select {
		case <-d.done():
		case <-time.After(20 * time.Second):
			t.Fatalf("device %s still connected to the stopped node", d.iid)
		}
		if code := d.closeCode(); code != direct.CloseMoved || !d.movedSignal() {
			t.Errorf("device %s (lc %t) closed with %d, moved signal %t; want %d after the signal", d.iid, d.lc, code, d.movedSignal(), direct.CloseMoved)
		}
	}
	c.waitSplit(t, b)
	for _, d := range append(slices.Clone(online), offline...) {
		c.reconnect(t, d)
		defer d.close()
		if d.server != b.serverFor(d) {
			t.Errorf("device %s reconnected to %s, want node b", d.iid, d.server)
		}
	}
	waitfor.True(t, 20*time.Second, "the cached m2 to arrive at the devices that were offline", func() bool {
		return c.rig.tally(t, "m2").Arrivals == int64(len(devs))
	})

	// m3 after the move: every device gets it from b.
	c.handoff(t, b.log, "m3", all)
	waitfor.True(t, 20*time.Second, "m3 to arrive at every device", func() bool { return c.rig.tally(t, "m3").Arrivals == int64(len(devs)) })

	for _, id := range []string{"m1", "m2", "m3"} {
		if tl := c.rig.tally(t, id); tl.Sent != int64(len(devs)) || tl.Arrivals != int64(len(devs)) || tl.Expired != 0 {
			t.Errorf("%s counts = %+v; want %d sent and arrived", id, tl, len(devs))
		}
	}
	for _, d := range devs {
		if ids := d.ledger.IDs(); !slices.Equal(ids, []string{"m1", "m2", "m3"}) {
			t.Errorf("device %s (lc %t) received %v, want m1, m2, m3", d.iid, d.lc, ids)
		}
		for _, id := range []string{"m1", "m2", "m3"} {
			if n := d.ledger.Times(id); n != 1 {
				t.Errorf("device %s (lc %t) received %s %d times", d.iid, d.lc, id, n)
			}
		}
		if got := c.rig.cached(t, d.iid); len(got) != 0 {
			t.Errorf("device %s still has %v cached", d.iid, got)
		}
	}
}

// TestDirectClusterRebalanceMovesDevices: a second node joining takes partitions from the
// first; the first moves exactly the devices of the partitions it lost, which reconnect to
// the new owner through the router; a push then reaches every device once.
func TestDirectClusterRebalanceMovesDevices(t *testing.T) {
	c := newCluster(t)
	a := c.addNode(t, "node-a")
	c.waitSplit(t, a)
	devs := clusterDevices(t, c)
	all := make([]string, len(devs))
	for i, d := range devs {
		all[i] = d.iid
		c.reconnect(t, d)
		defer d.close()
		if d.server != a.serverFor(d) {
			t.Fatalf("device %s routed to %s, want node a alone", d.iid, d.server)
		}
	}
	b := c.addNode(t, "node-b")
	c.waitSplit(t, a, b)
	var moved []*device
	for _, d := range devs {
		if c.owner(d.iid) != b {
			continue
		}
		moved = append(moved, d)
		select {
		case <-d.done():
		case <-time.After(20 * time.Second):
			t.Fatalf("device %s of a partition node a lost is still connected to it", d.iid)
		}
		if code := d.closeCode(); code != direct.CloseMoved || !d.movedSignal() {
			t.Errorf("device %s (lc %t) closed with %d, moved signal %t; want %d after the signal", d.iid, d.lc, code, d.movedSignal(), direct.CloseMoved)
		}
	}
	if len(moved) == 0 || len(moved) == len(devs) {
		t.Fatalf("%d of %d devices moved; want some", len(moved), len(devs))
	}
	for _, d := range devs {
		if c.owner(d.iid) == a {
			select {
			case <-d.done():
				t.Errorf("device %s of a partition node a kept was disconnected", d.iid)
			default:
			}
		}
	}
	for _, d := range moved {
		c.reconnect(t, d)
		defer d.close()
		if d.server != b.serverFor(d) {
			t.Errorf("device %s reconnected to %s, want node b", d.iid, d.server)
		}
	}
	c.handoff(t, a.log, "r1", all)
	waitfor.True(t, 20*time.Second, "r1 to arrive at every device", func() bool { return c.rig.tally(t, "r1").Arrivals == int64(len(devs)) })
	if tl := c.rig.tally(t, "r1"); tl.Sent != int64(len(devs)) {
		t.Errorf("r1 counts = %+v; want %d sent", tl, len(devs))
	}
	for _, d := range devs {
		if ids := d.ledger.IDs(); !slices.Equal(ids, []string{"r1"}) || d.ledger.Times("r1") != 1 {
			t.Errorf("device %s (lc %t) received %v (r1 %d times), want r1 once", d.iid, d.lc, ids, d.ledger.Times("r1"))
		}
	}
}

// syncBuf is an io.Writer safe for the CLI's goroutine and the test's reads.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDirectDeviceCLIOriginalProtocol: `pushsim device -protocol lc` registers its
// installation, asks the original's router, logs in with the original's protocol and prints
// the push it receives, acked.
func TestDirectDeviceCLIOriginalProtocol(t *testing.T) {
	c := newCluster(t)
	a := c.addNode(t, "node-a")
	c.waitSplit(t, a)
	out := &syncBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- sim.RunDeviceCLI(ctx, []string{"-api", c.api, "-app-id", testApp, "-app-key", testKey,
			"-installation-id", "cli-lc-1", "-protocol", "lc", "-count", "1"}, out)
	}()
	waitfor.True(t, 20*time.Second, "the CLI's device to connect", func() bool { return a.core.Connected() == 1 })
	c.handoff(t, a.log, "c1", []string{"cli-lc-1"})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pushsim device -protocol lc: %v\n%s", err, out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("pushsim device -protocol lc did not end after its push:\n%s", out)
	}
	if s := out.String(); !strings.Contains(s, "the original's protocol") || !strings.Contains(s, `"id":"c1"`) {
		t.Errorf("CLI output lacks the connection or the push:\n%s", s)
	}
	waitfor.True(t, 10*time.Second, "c1's arrival", func() bool { return c.rig.tally(t, "c1").Arrivals == 1 })
}
