package fanout

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// slowSender plays a gateway with latency: each Send call waits until the test answers it.
// The test answers the calls in flight newest first, so that batches come back out of order.
type slowSender struct {
	rec    *recSender
	calls  chan slowCall
	giveUp chan struct{}       // closed: every call is answered at once
	fail   func(call int) bool // this call fails after sending (a crash); nil: none

	mu       sync.Mutex
	n        int // calls so far
	inflight int
	max      int
}

type slowCall struct {
	size   int
	crash  bool // this call fails after sending
	answer chan struct{}
}

func newSlowSender(rec *recSender) *slowSender {
	return &slowSender{rec: rec, calls: make(chan slowCall, 64), giveUp: make(chan struct{})}
}

func (s *slowSender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	s.mu.Lock()
	s.n++
	call := s.n
	s.inflight++
	s.max = max(s.max, s.inflight)
	s.mu.Unlock()
	crash := s.fail != nil && s.fail(call)
	c := slowCall{size: len(ds), crash: crash, answer: make(chan struct{})}
	select {
	case s.calls <- c:
		select {
		case <-c.answer:
		case <-s.giveUp:
		}
	case <-s.giveUp:
	}
	err := s.rec.Send(ctx, ds, res)
	s.mu.Lock()
	s.inflight--
	s.mu.Unlock()
	if err == nil && crash {
		return errors.New("crash") // delivered, but the worker never learns it
	}
	return err
}

// answerAll makes every call from now on answer at once.
func (s *slowSender) answerAll() {
	select {
	case <-s.giveUp:
	default:
		close(s.giveUp)
	}
}

// answer answers the calls in flight, newest first, whenever want of them wait, or when the
// targets of the calls so far add up to total (the task's last batches); from the first call
// that crashes on, every call is answered at once. It returns when the task ended (done).
func (s *slowSender) answer(t *testing.T, want, total int, done <-chan error) error {
	t.Helper()
	var pending []slowCall
	handed := 0
	deadline := time.After(20 * time.Second)
	for {
		select {
		case c := <-s.calls:
			pending = append(pending, c)
			handed += c.size
			if c.crash {
				s.answerAll()
			} else if len(pending) < want && handed < total {
				continue
			}
			for _, c := range slices.Backward(pending) {
				close(c.answer)
			}
			pending = pending[:0]
		case err := <-done:
			for _, c := range pending {
				close(c.answer)
			}
			return err
		case <-deadline:
			s.mu.Lock()
			most := s.max
			s.mu.Unlock()
			s.answerAll()
			for _, c := range pending {
				close(c.answer)
			}
			<-done
			t.Fatalf("stuck with %d calls waiting for an answer (most in flight %d, want %d): batches are not sent ahead", len(pending), most, want)
		}
	}
}

// With a gateway that answers slowly, a task keeps SendAhead batches at the sender instead of
// one, answers may come back in any order, and every target is still delivered and counted
// exactly once.
func TestFanoutSendAheadUnderLatency(t *testing.T) {
	const n = 2000
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, n)
	cfg := DefaultWorkerConfig()
	cfg.BatchSize = 50
	cfg.SendAhead = 4
	job, tasks := e.planDirect(push.Job{}, PlannerConfig{BucketsPerTask: 64, IDsPerTask: 1000})
	if len(tasks) != 1 {
		t.Fatalf("%d tasks", len(tasks))
	}
	rec := newRecSender()
	snd := newSlowSender(rec)
	done := make(chan error, 1)
	go func() { done <- e.worker(cfg, snd).RunTask(context.Background(), &tasks[0]) }()
	if err := snd.answer(t, cfg.SendAhead, n, done); err != nil {
		t.Fatal(err)
	}
	if snd.max != cfg.SendAhead {
		t.Errorf("at most %d batches at the sender at once, want SendAhead %d", snd.max, cfg.SendAhead)
	}
	want := expected(t, n, `{}`)
	for id := range want {
		if c := rec.got[id]; c != 1 {
			t.Errorf("%s delivered %d times", id, c)
		}
	}
	r := e.record(job.NotificationObjectID)
	if r.Status != push.StatusDone {
		t.Errorf("status %s", r.Status)
	}
	checkCounts(t, r.Counts, countsOf(want))
}

// SendAhead 1 is the one-batch-at-a-time send: never two batches at the sender.
func TestFanoutSendAheadOne(t *testing.T) {
	const n = 500
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, n)
	cfg := DefaultWorkerConfig()
	cfg.BatchSize = 50
	cfg.SendAhead = 1
	_, tasks := e.planDirect(push.Job{}, PlannerConfig{BucketsPerTask: 64, IDsPerTask: 1000})
	snd := newSlowSender(newRecSender())
	done := make(chan error, 1)
	go func() { done <- e.worker(cfg, snd).RunTask(context.Background(), &tasks[0]) }()
	if err := snd.answer(t, 1, n, done); err != nil {
		t.Fatal(err)
	}
	if snd.max != 1 {
		t.Errorf("%d batches at the sender at once, want 1", snd.max)
	}
}

// A task that dies with batches in flight (answered out of order) resumes from a checkpoint
// that never passed an unanswered batch: every target is delivered, the duplicates stay
// within the batches in flight plus the checkpoint interval per crash, and the counts on the
// record are exact.
func TestFanoutSendAheadCrashResumes(t *testing.T) {
	const n = 3000
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, n)
	cfg := DefaultWorkerConfig()
	cfg.BatchSize = 32
	cfg.CheckpointEvery = 64
	cfg.SendAhead = 4
	job, tasks := e.planDirect(push.Job{}, PlannerConfig{BucketsPerTask: 64, IDsPerTask: 1000})
	rec := newRecSender()
	crashes := 0
	for _, at := range []int{7, 19, 30} {
		snd := newSlowSender(rec)
		snd.fail = func(call int) bool { return call >= at }
		done := make(chan error, 1)
		go func() { done <- e.worker(cfg, snd).RunTask(context.Background(), &tasks[0]) }()
		if err := snd.answer(t, cfg.SendAhead, n, done); err == nil {
			t.Fatalf("task finished before the crash at call %d", at)
		}
		crashes++
	}
	if err := e.worker(cfg, rec).RunTask(context.Background(), &tasks[0]); err != nil {
		t.Fatal(err)
	}
	want := expected(t, n, `{}`)
	dups := 0
	for id := range want {
		c := rec.got[id]
		if c < 1 {
			t.Errorf("%s never delivered", id)
		}
		dups += c - 1
	}
	bound := crashes * (cfg.CheckpointEvery + cfg.SendAhead*cfg.BatchSize)
	if dups > bound {
		t.Errorf("%d duplicates after %d crashes, want at most %d", dups, crashes, bound)
	}
	t.Logf("%d targets, %d duplicates after %d crashes (bound %d)", len(want), dups, crashes, bound)
	r := e.record(job.NotificationObjectID)
	if r.Status != push.StatusDone {
		t.Errorf("status %s", r.Status)
	}
	checkCounts(t, r.Counts, countsOf(want)) // duplicates are not counted twice
}

// A task stopped with batches at the sender (a SIGTERM, or a rebalance that moves its
// partition) lets them answer, makes them final and leaves its cursor past them: whoever
// resumes the task sends none of them again. The task is paced, so the stop lands while its
// next batch waits for its turn, as in a paced cluster push.
func TestFanoutStopFinishesBatchesInFlight(t *testing.T) {
	const n = 300
	e := newEnv(t)
	e.createApp(64, nil)
	e.seed(64, n)
	cfg := DefaultWorkerConfig()
	cfg.SendAhead = 4
	// 200 targets/s: batches of 20, each 100 ms after the one before.
	job, tasks := e.planDirect(push.Job{FlowControl: 200}, PlannerConfig{BucketsPerTask: 64, IDsPerTask: 1000})
	if len(tasks) != 1 {
		t.Fatalf("%d tasks", len(tasks))
	}
	first := newRecSender()
	snd := newSlowSender(first)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.worker(cfg, snd).RunTask(ctx, &tasks[0]) }()
	var pending []slowCall
	for len(pending) < 2 {
		select {
		case c := <-snd.calls:
			pending = append(pending, c)
		case err := <-done:
			t.Fatalf("task ended before two batches were in flight: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("two batches never reached the sender")
		}
	}
	stop()
	snd.answerAll()
	for _, c := range pending {
		close(c.answer)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped task returned %v, want context.Canceled", err)
	}
	if got := first.count(); got < 40 {
		t.Fatalf("the stopped run delivered %d, want at least the two batches in flight (40)", got)
	}

	again := newRecSender()
	if err := e.worker(cfg, again).RunTask(context.Background(), &tasks[0]); err != nil {
		t.Fatal(err)
	}
	want := expected(t, n, `{}`)
	for id := range want {
		switch c := first.got[id] + again.got[id]; {
		case c == 0:
			t.Errorf("%s never delivered", id)
		case c > 1:
			t.Errorf("%s delivered %d times: the resumed task repeated a batch the stopped one had sent", id, c)
		}
	}
	checkCounts(t, e.record(job.NotificationObjectID).Counts, countsOf(want))
}
