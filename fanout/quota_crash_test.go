package fanout

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/push"
)

const envQuotaChild = "PUSHD_FANOUT_QUOTA_CHILD"

// TestQuotaHelperProcess is the child of TestQuotaSIGKILLAfterDefer: planner and worker on the
// parent's store until the push is done (or the armed fault point kills it).
func TestQuotaHelperProcess(t *testing.T) {
	if os.Getenv(envQuotaChild) != "1" {
		t.Skip("runs only as the child of TestQuotaSIGKILLAfterDefer")
	}
	e := &env{t: t, dir: os.Getenv(envDir)}
	e.open()
	defer e.close()
	snd, err := newFileSender(os.Getenv(envOut), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.f.Close()
	r := e.start(crashWorkerConfig(), snd, 1)
	defer r.stop()
	e.waitDone(os.Getenv(envNObj))
}

// TestQuotaSIGKILLAfterDefer: pushd's fan-out killed (SIGKILL, by the fault point
// fanout/worker-after-defer) right after a batch's deferred targets were written and before
// the batch was counted loses nothing: the restarted fan-out repeats the batch from its
// checkpoint, the record counts every vivo target once (sent or deferred, exactly), every
// target it counts deferred has its row, and once the quota day rolls over the re-driver sends
// them: every device reached, the record's deferred back to 0 and its sent equal to the
// targets, nothing counted twice.
func TestQuotaSIGKILLAfterDefer(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	const n, quota = 1000, 800
	dir := t.TempDir()
	out := dir + "/delivered.txt"
	e := &env{t: t, dir: dir + "/data"}
	e.open()
	e.createApp(crashBuckets, func(s *push.AppSettings) { s.VendorQuotas.Vivo = push.VendorQuota{Daily: quota} })
	e.seedVivo(crashBuckets, n)
	job := e.submit(push.Job{Where: []byte(`{"channels":"vq"}`), ExpiresAt: time.Now().Add(72 * time.Hour)})
	e.close()

	for _, point := range []string{"fanout/worker-after-defer", ""} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestQuotaHelperProcess$")
		cmd.Env = append(os.Environ(), envQuotaChild+"=1", envDir+"="+e.dir, envOut+"="+out,
			envNObj+"="+job.NotificationObjectID, faultpoint.Env+"="+point)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stderr, &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			killed := strings.Contains(stderr.String(), "faultpoint "+point+" reached")
			if point != "" && !killed {
				t.Fatalf("child ended without reaching %s: %v\n%s", point, err, stderr.String())
			}
			if point == "" && err != nil {
				t.Fatalf("final child: %v\n%s", err, stderr.String())
			}
		case <-time.After(3 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("child did not finish\n%s", stderr.String())
		}
		truncatePartial(t, out)
	}

	e.open()
	defer e.close()
	rec := e.record(job.NotificationObjectID)
	v := rec.Counts[push.ChannelVivo]
	if v.Targets != n || v.Sent+v.Deferred != n || v.Deferred == 0 || v.Sent > quota {
		t.Fatalf("vivo %+v after the crash: want %d targets, each sent or deferred once, at most %d sent", v, n, quota)
	}
	rows, err := e.st.DueDeferred(context.Background(), time.Now().Add(96*time.Hour), 10*n)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(rows)) < v.Deferred {
		t.Fatalf("%d deferred rows for %d targets counted deferred: a deferral was lost", len(rows), v.Deferred)
	}

	// The next China day: the re-driver sends them within its budget.
	now := time.Now()
	_, end := push.QuotaWindow(now, push.ChinaTime)
	clk := &fakeClock{now: end.Add(time.Second)}
	snd, err := newFileSender(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.f.Close()
	dcfg := DefaultDeferralsConfig()
	dcfg.clock = clk
	dr, err := NewDeferrals(dcfg, e.st, snd, nil, zap.NewNop(), metrics.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	for {
		k, err := dr.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			break
		}
	}
	rec = e.record(job.NotificationObjectID)
	if v := rec.Counts[push.ChannelVivo]; v.Targets != n || v.Sent != n || v.Deferred != 0 || v.Failed+v.Expired != 0 {
		t.Fatalf("vivo %+v after the re-drive: want all %d sent, none deferred", v, n)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		got[sc.Text()]++
	}
	for i := range n {
		if id := fmt.Sprintf("v%07d", i); got[id] < 1 {
			t.Fatalf("%s never delivered", id)
		}
	}
	dups := 0
	for _, c := range got {
		dups += c - 1
	}
	t.Logf("%d targets, %d duplicates after a SIGKILL after a deferral write", n, dups)
}
