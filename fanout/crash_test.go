package fanout

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
)

// The SIGKILL test runs planner and worker in a child process (this test binary, re-executed
// into TestFanoutHelperProcess) on a real Pebble directory with the embedded log. The child's
// sender appends each delivered object id to a file, fsynced per batch, before answering. The
// parent kills the child with SIGKILL mid-push (twice), restarts it, and checks that every
// target was delivered at least once, with at most the batches in flight and the deliveries
// since the last synced checkpoint (SyncEvery) duplicated per task per crash, and that the
// record's counts are exact.

const (
	envChild = "PUSHD_FANOUT_CHILD"
	envDir   = "PUSHD_FANOUT_DIR"
	envOut   = "PUSHD_FANOUT_OUT"
	envStall = "PUSHD_FANOUT_STALL"
	envNObj  = "PUSHD_FANOUT_NOBJ"

	crashBuckets = 64
	crashBatch   = 64
	crashAhead   = 2 // SendAhead: batches per task at the sender at once
	// SyncEvery: checkpoints between are written without an fsync; a kill that lands while
	// Pebble's log is in an fsync loses those it has not handed to the OS yet.
	crashSyncEvery = 2 * crashBatch
)

func crashWorkerConfig() WorkerConfig {
	cfg := DefaultWorkerConfig()
	cfg.BatchSize = crashBatch
	cfg.SendAhead = crashAhead
	cfg.SyncEvery = crashSyncEvery
	return cfg
}

func TestFanoutHelperProcess(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("runs only as the child of TestFanoutSIGKILLMidPush")
	}
	// One task per 8 buckets however few the rows: the parent counts duplicates per task so.
	e := &env{t: t, dir: os.Getenv(envDir), pcfg: &PlannerConfig{BucketsPerTask: 8, IDsPerTask: 1000}}
	e.open()
	defer e.close()
	stall, _ := strconv.Atoi(os.Getenv(envStall))
	snd, err := newFileSender(os.Getenv(envOut), stall)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.f.Close()
	r := e.start(crashWorkerConfig(), snd, 1)
	defer r.stop()
	e.waitDone(os.Getenv(envNObj))
}

// fileSender appends one line per delivery and fsyncs before answering. With stall > 0 it
// stops answering once the file holds stall lines (the parent then kills the process).
type fileSender struct {
	mu    sync.Mutex
	f     *os.File
	lines int
	stall int
	buf   []byte
}

func newFileSender(path string, stall int) (*fileSender, error) {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &fileSender{f: f, lines: bytes.Count(b, []byte{'\n'}), stall: stall}, nil
}

func (s *fileSender) Send(ctx context.Context, ds []push.Delivery, res []push.Result) error {
	s.mu.Lock()
	n := len(ds)
	stalled := false
	if s.stall > 0 && s.lines+n >= s.stall {
		n, stalled = max(s.stall-s.lines, 0), true
	}
	s.buf = s.buf[:0]
	for i := range ds[:n] {
		s.buf = append(s.buf, ds[i].Target.ObjectID...)
		s.buf = append(s.buf, '\n')
	}
	if _, err := s.f.Write(s.buf); err != nil {
		s.mu.Unlock()
		return err
	}
	if err := s.f.Sync(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.lines += n
	s.mu.Unlock()
	if stalled {
		<-ctx.Done() // never answer: the parent kills us here
		return ctx.Err()
	}
	for i := range res {
		res[i] = push.Result{Outcome: push.OutcomeSent}
	}
	return nil
}

func countLines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}

// truncatePartial drops a partly written last line (the kill can land mid-write).
func truncatePartial(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 != len(b) {
		if err := os.Truncate(path, int64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFanoutSIGKILLMidPush(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	const n = 10000
	dir := t.TempDir()
	out := dir + "/delivered.txt"
	e := &env{t: t, dir: dir + "/data"}
	e.open()
	e.createApp(crashBuckets, nil)
	e.seed(crashBuckets, n)
	job := e.submit(push.Job{})
	e.close()

	stalls := []int{2500, 6000, 0} // two kills, then a run to the end
	for _, stall := range stalls {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFanoutHelperProcess$")
		cmd.Env = append(os.Environ(), envChild+"=1", envDir+"="+e.dir, envOut+"="+out,
			envStall+"="+strconv.Itoa(stall), envNObj+"="+job.NotificationObjectID)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if stall > 0 {
			waitfor.True(t, 2*time.Minute, "child delivering "+strconv.Itoa(stall), func() bool {
				select {
				case err := <-exited:
					t.Fatalf("child exited before the kill: %v\n%s", err, stderr.String())
				default:
				}
				return countLines(t, out) >= stall
			})
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-exited
			truncatePartial(t, out)
			continue
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("final child: %v\n%s", err, stderr.String())
			}
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("final child did not finish\n%s", stderr.String())
		}
	}

	e.open()
	defer e.close()
	rec := e.record(job.NotificationObjectID)
	want := expected(t, n, `{}`)
	checkCounts(t, rec.Counts, countsOf(want))

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make(map[string]int)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		got[sc.Text()]++
	}
	crashes := len(stalls) - 1
	dupsPerTask := make(map[int]int)
	total := 0
	for id := range want {
		c := got[id]
		if c < 1 {
			t.Errorf("%s never delivered", id)
			continue
		}
		task := push.Bucket(id, crashBuckets) / 8 // the child's BucketsPerTask
		dupsPerTask[task] += c - 1
		total += c - 1
	}
	bound := crashBatch*crashAhead + crashSyncEvery
	for task, d := range dupsPerTask {
		if d > crashes*bound {
			t.Errorf("task %d: %d duplicates after %d crashes, want at most %d (the batches in flight and the unsynced checkpoints per crash)", task, d, crashes, crashes*bound)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d distinct ids delivered, want %d", len(got), len(want))
	}
	t.Logf("%d targets, %d deliveries, %d duplicates after %d SIGKILLs (bound %d per task per crash)",
		len(want), total+len(want), total, crashes, bound)
}
