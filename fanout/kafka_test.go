package fanout

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue/kafka"
)

func newKafka(t *testing.T) func() *kafka.Log {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := kafka.Config{
		Brokers:           c.ListenAddrs(),
		Partitions:        testParts,
		ReplicationFactor: 1,
		HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout:    2 * time.Second,
		RebalanceTimeout:  2 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		MaxWait:           100 * time.Millisecond,
		MinBackoff:        time.Millisecond,
		MaxBackoff:        10 * time.Millisecond,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	return func() *kafka.Log {
		l, err := kafka.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
}

// stallSender delivers like rec until it has delivered after deliveries, then blocks every
// call until its ctx ends (the worker is "killed" while stuck there).
type stallSender struct {
	rec     *recSender
	after   int
	mu      sync.Mutex
	n       int
	stalled chan struct{}
	once    sync.Once
}

func (s *stallSender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	s.mu.Lock()
	stall := s.n >= s.after
	if !stall {
		s.n += len(ds)
	}
	s.mu.Unlock()
	if stall {
		s.once.Do(func() { close(s.stalled) })
		<-ctx.Done()
		return ctx.Err()
	}
	return s.rec.Send(ctx, ds, res)
}

// gateSender holds every call until gate is closed.
type gateSender struct {
	rec  *recSender
	gate chan struct{}
}

func (s *gateSender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	select {
	case <-s.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.rec.Send(ctx, ds, res)
}

func TestFanoutKafkaWorkerKilledMidPush(t *testing.T) {
	if testing.Short() {
		t.Skip("kfake consumer-group rebalances take seconds")
	}
	const n = 5000
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, n)
	newLog := newKafka(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	pcfg := DefaultPlannerConfig()
	pcfg.MinTaskRows = 0 // 8 tasks for the two workers to share, however few the rows
	planner, err := NewPlanner(pcfg, e.st, newLog(), zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	g.Go(func() error { return planner.Run(gctx) })

	cfg := DefaultWorkerConfig()
	cfg.BatchSize = 32
	cfg.CheckpointEvery = 128
	cfg.abrupt = true
	rec := newRecSender() // deliveries of both workers
	stall := &stallSender{rec: rec, after: 600, stalled: make(chan struct{})}
	wA, err := NewWorker(cfg, e.st, newLog(), stall, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	// B waits for A to stall before sending anything, so A surely owns partitions with work
	// when it is killed (a rebalance cancels B's waiting handlers and moves partitions to A).
	gated := &gateSender{rec: rec, gate: stall.stalled}
	wB, err := NewWorker(cfg, e.st, newLog(), gated, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	ctxA, killA := context.WithCancel(gctx)
	doneA := make(chan error, 1)
	go func() { doneA <- wA.Run(ctxA) }()
	g.Go(func() error { return wB.Run(gctx) })

	job := e.submitTo(newLog(), push.Job{})
	select {
	case <-stall.stalled:
	case <-time.After(60 * time.Second):
		t.Fatal("worker A never got to its stall point")
	}
	killA() // no final checkpoint, no commit: its partitions move to B
	if err := <-doneA; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	r := e.waitDone(job.NotificationObjectID)
	cancel()
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}

	want := expected(t, n, `{}`)
	checkCounts(t, r.Counts, countsOf(want))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	dups := 0
	for id := range want {
		if rec.got[id] < 1 {
			t.Errorf("%s lost", id)
		}
		dups += rec.got[id] - 1
	}
	t.Logf("%d targets, %d duplicates after killing one of two workers (A sent %d)", len(want), dups, stall.n)
}
