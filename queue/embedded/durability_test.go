package embedded

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/queuetest"
)

const killChildEnv = "PUSHD_QUEUE_KILL9_DIR"

// TestQueueEmbeddedKill9Child is the child process of TestQueueEmbeddedKill9Durable: it
// appends records one by one and prints "acked i" after each Append returned, until killed.
func TestQueueEmbeddedKill9Child(t *testing.T) {
	dir := os.Getenv(killChildEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestQueueEmbeddedKill9Durable")
	}
	o := open(t, dir, testOptions())
	for i := 0; i < 1_000_000; i++ {
		r := queue.Record{Partition: i % 4, Value: []byte(strconv.Itoa(i))}
		if err := o.Append(context.Background(), queuetest.Topic, r); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		fmt.Printf("acked %d\n", i)
	}
}

// TestQueueEmbeddedKill9Durable kills a process appending to the log with SIGKILL and checks
// that every record whose Append returned is there after reopening the directory.
func TestQueueEmbeddedKill9Durable(t *testing.T) {
	if os.Getenv(killChildEnv) != "" {
		t.Skip("child")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestQueueEmbeddedKill9Child$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := -1
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		n, ok := strings.CutPrefix(sc.Text(), "acked ")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(n)
		if err != nil || i != acked+1 {
			t.Fatalf("child printed %q after acked %d", sc.Text(), acked)
		}
		acked = i
		if acked >= 200 && !killed {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended before it was killed: %v", err)
	}
	t.Logf("child killed after %d acked appends", acked+1)

	o := open(t, dir, testOptions())
	defer o.close(t)
	found := make(map[int]bool)
	for p := range 4 {
		msgs, err := o.read(nil, queuetest.Topic, p, 0, 1<<62, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if m.Offset != int64(i) {
				t.Fatalf("partition %d: message %d has offset %d", p, i, m.Offset)
			}
			v, _ := strconv.Atoi(string(m.Value))
			found[v] = true
		}
	}
	for i := 0; i <= acked; i++ {
		if !found[i] {
			t.Errorf("acked record %d lost after SIGKILL", i)
		}
	}
	// Appends continue after the recovered offsets.
	if err := o.Append(context.Background(), queuetest.Topic, queue.Record{Partition: 0, Value: []byte("after")}); err != nil {
		t.Fatal(err)
	}
}

func TestQueueEmbeddedTrim(t *testing.T) {
	o := open(t, t.TempDir(), testOptions())
	defer o.close(t)
	ctx := context.Background()
	for i := range 10 {
		if err := o.Append(ctx, queuetest.Topic, queue.Record{Partition: 1, Value: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	// Group a handles all 10, group b stops at offset 5.
	var a, b atomic.Int64
	ctxA, stopA := context.WithCancel(ctx)
	ctxB, stopB := context.WithCancel(ctx)
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() {
		doneA <- o.Consume(ctxA, queuetest.Topic, "a", func(context.Context, queue.Message) error { a.Add(1); return nil })
	}()
	go func() {
		doneB <- o.Consume(ctxB, queuetest.Topic, "b", func(_ context.Context, m queue.Message) error {
			if m.Offset >= 5 {
				return errors.New("not yet")
			}
			b.Add(1)
			return nil
		})
	}()
	waitfor.True(t, 10*time.Second, "both groups progressed", func() bool { return a.Load() == 10 && b.Load() == 5 })
	if err := o.trim(); err != nil {
		t.Fatal(err)
	}
	msgs, err := o.read(nil, queuetest.Topic, 1, 0, 100, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 5 || msgs[0].Offset != 5 {
		t.Fatalf("after trim: %d messages from offset %d, want 5 from offset 5", len(msgs), msgs[0].Offset)
	}
	// Partitions no group has committed in are kept whole (no trim below a known group's 0).
	stopA()
	stopB()
	if err := errors.Join(<-doneA, <-doneB); err != nil {
		t.Fatal(err)
	}
}

func TestQueueEmbeddedCloseStopsConsumers(t *testing.T) {
	o := open(t, t.TempDir(), testOptions())
	defer o.db.Close()
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		done <- o.Consume(context.Background(), queuetest.Topic, "g", func(context.Context, queue.Message) error { return nil })
	}()
	<-started
	if err := o.Log.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("Consume after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Consume did not return after Close")
	}
	if err := o.Append(context.Background(), queuetest.Topic, queue.Record{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
}
