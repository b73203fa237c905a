package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/fanout"
	"github.com/pushd/pushd/internal/lease"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/kafka"
	pstore "github.com/pushd/pushd/store/pebble"
)

// The cluster scenario of issue 15: three scheduler nodes share one store (the embedded Pebble
// store standing for Cassandra) and one Kafka cluster (kfake; each node its own client), a
// planner and a worker fan the fired jobs out to a recording sender, and every scheduled push
// must reach every token once while the lease holder pauses and loses its lease.

// testClock is the clock the nodes' leases and schedulers share; the test moves it.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// firings counts, by job id, the jobs the scheduler nodes appended to push.jobs.
type firings struct {
	mu   sync.Mutex
	jobs map[string]int
}

// firingLog is a node's Kafka log, counting its job appends into firings.
type firingLog struct {
	*kafka.Log
	f *firings
}

func (l firingLog) Append(ctx context.Context, topic string, recs ...queue.Record) error {
	if err := l.Log.Append(ctx, topic, recs...); err != nil {
		return err
	}
	if topic == queue.TopicJobs {
		l.f.mu.Lock()
		defer l.f.mu.Unlock()
		for _, r := range recs {
			var j push.Job
			if err := json.Unmarshal(r.Value, &j); err != nil {
				return err
			}
			l.f.jobs[j.ID]++
		}
	}
	return nil
}

// ledger counts deliveries per device token.
type ledger struct {
	mu  sync.Mutex
	got map[string]int
}

func (l *ledger) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range ds {
		l.got[ds[i].Target.DeviceID]++
		res[i] = push.Result{Outcome: push.OutcomeSent}
	}
	return nil
}

// clusterNode is one scheduler node: its lease keeper and its scheduler.
type clusterNode struct {
	name  string
	k     *lease.Keeper
	s     *Scheduler
	set   *metrics.Set
	pause bool // a paused node does nothing in a round
}

func metricValue(t *testing.T, set *metrics.Set, name string) string {
	t.Helper()
	var b bytes.Buffer
	set.WritePrometheus(&b)
	for _, l := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}

func TestSchedulerClusterFiresOnceWhileHolderPauses(t *testing.T) {
	const (
		app    = "app1"
		tokens = 60
		bks    = 16
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	st, err := pstore.Open(t.TempDir(), pstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	settings := push.DefaultSettings()
	settings.Buckets, settings.DailyVolume = bks, 0
	if err := st.CreateApp(ctx, push.App{ID: app, Name: "test", Settings: settings}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var insts []push.Installation
	for i := range tokens {
		oid, tok := fmt.Sprintf("o%04d", i), fmt.Sprintf("%064x", i)
		insts = append(insts, push.Installation{
			Route:     push.Route{ObjectID: oid, DeviceType: push.DeviceIOS, DeviceToken: tok, APNsTopic: "com.example.app", UpdatedAt: now.UnixMilli()},
			CreatedAt: now.UnixMilli(),
			Doc:       fmt.Appendf(nil, `{"objectId":%q,"deviceType":"ios","deviceToken":%q,"apnsTopic":"com.example.app"}`, oid, tok),
		})
	}
	if err := st.SeedInstallations(app, bks, insts); err != nil {
		t.Fatal(err)
	}

	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	kcfg := kafka.Config{
		Brokers: kc.ListenAddrs(), ReplicationFactor: 1,
		Partitions:        map[string]int{queue.TopicJobs: 2, queue.TopicTasks: 4, queue.TopicDirect: 2},
		HeartbeatInterval: 100 * time.Millisecond, SessionTimeout: 2 * time.Second, RebalanceTimeout: 2 * time.Second,
		JoinGroupBackoff: 100 * time.Millisecond, MaxWait: 100 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
	}
	if err := kafka.EnsureTopics(ctx, kcfg); err != nil {
		t.Fatal(err)
	}
	newLog := func() *kafka.Log {
		l, err := kafka.New(kcfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}

	// Fan-out: one planner and one worker, to a per-token ledger.
	led := &ledger{got: map[string]int{}}
	g, gctx := errgroup.WithContext(ctx)
	pl, err := fanout.NewPlanner(fanout.DefaultPlannerConfig(), st, newLog(), zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	wk, err := fanout.NewWorker(fanout.DefaultWorkerConfig(), st, newLog(), led, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	g.Go(func() error { return pl.Run(gctx) })
	g.Go(func() error { return wk.Run(gctx) })
	defer func() {
		cancel()
		if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()

	// Three scheduler nodes on one clock.
	clk := &testClock{t: now}
	lcfg := lease.Config{TTL: 10 * time.Second, Renew: 3 * time.Second}
	fired := &firings{jobs: map[string]int{}}
	var nodes []*clusterNode
	for i := range 3 {
		n := &clusterNode{name: fmt.Sprintf("n%d", i+1), set: metrics.NewSet()}
		n.k = lease.New("scheduler", n.name, lcfg, st, zap.NewNop(), n.set, clk.Now)
		n.s = New(Config{}, st, firingLog{newLog(), fired}, n.k, zap.NewNop(), n.set, clk.Now)
		nodes = append(nodes, n)
	}
	n1, n2 := nodes[0], nodes[1]

	var scheduled []push.Scheduled
	schedule := func(due time.Time) {
		t.Helper()
		id, err := st.NextID(ctx, "scheduled")
		if err != nil {
			t.Fatal(err)
		}
		oid := fmt.Sprintf("rec%d", id)
		job := push.Job{ID: fmt.Sprintf("job%d", id), AppID: app, NotificationObjectID: oid, NotificationID: oid,
			Kind: push.JobQuery, Where: json.RawMessage(`{}`), Data: json.RawMessage(`{"alert":"hi"}`), Prod: "prod", CreatedAt: clk.Now()}
		n := push.Notification{ObjectID: oid, AppID: app, NotificationID: oid, JobID: job.ID, Status: push.StatusScheduled,
			CreatedAt: clk.Now(), UpdatedAt: clk.Now(), Kind: job.Kind, Data: job.Data, Prod: job.Prod, ScheduledID: id, PushTime: due}
		sp := push.Scheduled{ID: id, AppID: app, DueAt: due, Job: job, CreatedAt: clk.Now()}
		if err := st.CreateScheduledNotification(ctx, n, sp); err != nil {
			t.Fatal(err)
		}
		scheduled = append(scheduled, sp)
	}
	// round runs one round of every node not paused, all at once: renew or acquire the
	// lease, then fire what is due.
	round := func() {
		t.Helper()
		var wg sync.WaitGroup
		for _, n := range nodes {
			if n.pause {
				continue
			}
			wg.Go(func() {
				n.k.Step(ctx)
				if _, err := n.s.Tick(ctx); err != nil {
					t.Errorf("node %s: %v", n.name, err)
				}
			})
		}
		wg.Wait()
	}

	// Phase 1: n1 holds the lease and pauses between its lease check and its claim of a due
	// push; n2 takes the lease over and pauses right after its own claim; n1 wakes up and its
	// claim, of the earlier epoch, is refused; n2 finishes the firing.
	n1.k.Step(ctx) // n1 starts first
	round()
	if l, ok := n1.k.Held(); !ok || l.Epoch != 1 {
		t.Fatalf("n1 holds %+v, %v; want the lease at epoch 1", l, ok)
	}
	schedule(clk.Now().Add(time.Second))
	clk.Advance(time.Second)
	n1Paused, n1Resume := make(chan struct{}), make(chan struct{})
	n1.s.beforeClaim = func(*push.Scheduled) { close(n1Paused); <-n1Resume }
	n1Tick := make(chan error, 1)
	go func() { _, err := n1.s.Tick(ctx); n1Tick <- err }()
	<-n1Paused
	n1.pause = true
	clk.Advance(lcfg.TTL) // n1's lease runs out while it is paused
	n2Claimed, n2Resume := make(chan struct{}), make(chan struct{})
	n2.s.afterClaim = func(*push.Scheduled) { close(n2Claimed); <-n2Resume }
	n2Tick := make(chan error, 1)
	go func() { n2.k.Step(ctx); _, err := n2.s.Tick(ctx); n2Tick <- err }()
	<-n2Claimed
	if l, ok := n2.k.Held(); !ok || l.Epoch != 2 {
		t.Fatalf("n2 holds %+v, %v; want the lease at epoch 2", l, ok)
	}
	close(n1Resume)
	if err := <-n1Tick; err != nil {
		t.Fatalf("n1's late tick: %v", err)
	}
	if got := metricValue(t, n1.set, "pushd_scheduler_fenced_total"); got != "1" {
		t.Errorf("n1 fenced %s times, want 1: its claim of epoch 1 must be refused", got)
	}
	close(n2Resume)
	if err := <-n2Tick; err != nil {
		t.Fatalf("n2's tick: %v", err)
	}
	n1.s.beforeClaim, n2.s.afterClaim = nil, nil
	n1.pause = false

	// Phase 2: rounds a second apart with more pushes due; n2, now the holder, pauses for 20
	// rounds and another node takes over.
	base := clk.Now()
	for _, d := range []time.Duration{5 * time.Second, 12 * time.Second, 30 * time.Second} {
		schedule(base.Add(d))
	}
	for r := range 40 {
		n2.pause = r >= 8 && r < 28
		clk.Advance(time.Second)
		round()
	}

	for _, sp := range scheduled {
		waitfor.True(t, 60*time.Second, "push "+sp.Job.NotificationObjectID+" done", func() bool {
			n, err := st.GetNotification(ctx, app, sp.Job.NotificationObjectID)
			return err == nil && n.Status == push.StatusDone
		})
		if _, err := st.GetScheduled(ctx, app, sp.ID); err == nil {
			t.Errorf("schedule %d is still there after its push finished", sp.ID)
		}
	}
	fired.mu.Lock()
	for _, sp := range scheduled {
		if n := fired.jobs[sp.Job.ID]; n != 1 {
			t.Errorf("job %s appended %d times, want once", sp.Job.ID, n)
		}
	}
	fired.mu.Unlock()
	total := 0
	for _, n := range nodes {
		var v int
		_, _ = fmt.Sscan(metricValue(t, n.set, "pushd_scheduler_fired_total"), &v)
		total += v
		t.Logf("node %s: fired %d, fenced %s, lease acquisitions %s, lost %s", n.name, v,
			metricValue(t, n.set, "pushd_scheduler_fenced_total"),
			metricValue(t, n.set, `pushd_lease_acquisitions_total{lease="scheduler"}`),
			metricValue(t, n.set, `pushd_lease_lost_total{lease="scheduler"}`))
	}
	if total != len(scheduled) {
		t.Errorf("the nodes fired %d times in all, want %d (once per scheduled push)", total, len(scheduled))
	}
	led.mu.Lock()
	defer led.mu.Unlock()
	if len(led.got) != tokens {
		t.Errorf("%d tokens received pushes, want %d", len(led.got), tokens)
	}
	for tok, n := range led.got {
		if n != len(scheduled) {
			t.Errorf("token %.8s… received %d pushes, want %d (one per scheduled push)", tok, n, len(scheduled))
		}
	}
}
