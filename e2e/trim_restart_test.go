package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
)

// Pushes accepted after a restart that follows an idle spell all reach their targets (issue 12,
// item 1): 3 pushes are done, the embedded log's trim deletes every message the planner and
// the workers committed (push.jobs and push.tasks emptied), pushd stops (SIGTERM, or SIGKILL),
// starts again on the same data, and 5 more pushes are accepted. Each of the 8 pushes reaches
// done with exact counts and every target token reaches the simulator 8 times. A log that
// restarts an emptied partition at offset 0 puts the new jobs and tasks below the committed
// offsets, where nobody reads them: those pushes stay in-queue with tasksDone 0.
//
// The trim runs every 50ms (--log-trim-every) and the test waits on /metrics until it has
// emptied both topics, instead of sleeping through an interval.
func TestE2ERestartAfterTrimLosesNoPush(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(t *testing.T, p *pushd)
	}{
		{"SIGTERM", func(t *testing.T, p *pushd) {
			if err := p.stop(stopTimeout); err != nil {
				t.Errorf("pushd exit after SIGTERM: %v", err)
			}
		}},
		{"SIGKILL", func(_ *testing.T, p *pushd) { p.kill() }},
	} {
		t.Run(c.name, func(t *testing.T) { testRestartAfterTrim(t, c.stop) })
	}
}

func testRestartAfterTrim(t *testing.T, stop func(t *testing.T, p *pushd)) {
	const (
		n      = 30 // audience of each push
		before = 3  // pushes before the restart
		after  = 5  // pushes after it
	)
	s := startPushsim(t)
	data := t.TempDir()
	c, tokens := prepareData(t, data, s, push.DefaultSettings(), n, "trim")
	// Each push's task goes through push.tasks (not run by the planner, as a push of one task
	// is by default), so that both topics are emptied by the trim and written after the restart.
	args := []string{"--roles", "api,fanout,scheduler", "--apns-endpoint", s.apnsURL,
		"--gateway-ca", filepath.Join(s.dir, "ca.pem"), "--log-trim-every", "50ms", "--fanout-inline-single-task=false"}
	p := startPushd(t, data, args...)
	c.base = p.base

	tasks := 0
	pushAll := func(k int, phase string) {
		t.Helper()
		oids := make([]string, k)
		for i := range oids {
			oids[i] = c.push(t, map[string]any{"data": map[string]any{"alert": fmt.Sprintf("%s %d", phase, i)}, "channels": []string{"trim"}})
		}
		for _, oid := range oids {
			rec := c.waitDone(t, oid)
			if rec.Devices != n || rec.Successes != n || rec.Failures != 0 || rec.TasksDone != rec.Tasks {
				t.Errorf("%s: record %s: %+v, want devices = successes = %d and every task done", phase, oid, rec, n)
			}
			tasks += rec.Tasks
		}
	}
	pushAll(before, "before")

	// The trim has deleted every job and every task: nothing is retained, and what was
	// trimmed covers each message appended.
	var jobsTrimmed, tasksTrimmed float64
	waitfor.True(t, pushTimeout, "the log's trim to empty push.jobs and push.tasks", func() bool {
		m := readMetrics(t, p.base)
		jobsTrimmed = m[topicSeries("pushd_queue_trimmed_messages_total", queue.TopicJobs)]
		tasksTrimmed = m[topicSeries("pushd_queue_trimmed_messages_total", queue.TopicTasks)]
		return m[topicSeries("pushd_queue_retained_messages", queue.TopicJobs)] == 0 &&
			m[topicSeries("pushd_queue_retained_messages", queue.TopicTasks)] == 0 &&
			jobsTrimmed >= before && tasksTrimmed >= float64(tasks)
	})
	t.Logf("trimmed %v jobs and %v tasks of %d pushes (%d tasks)", jobsTrimmed, tasksTrimmed, before, tasks)

	stop(t, p)
	p = startPushd(t, data, args...)
	c.base = p.base
	pushAll(after, "after the restart")

	// The ledger: every target got every push; nothing was in flight at the stop, so nothing
	// is sent twice.
	st := s.stats.mustGet(t, true)
	short, dups, strangers := deliveries(st.PerToken, tokens, before+after)
	if len(short) > 0 {
		t.Errorf("%d of %d tokens got fewer than %d pushes (first %s: %d)", len(short), n, before+after, short[0], st.PerToken[short[0]])
	}
	if len(strangers) > 0 {
		t.Errorf("%d tokens that are not targets reached the simulator", len(strangers))
	}
	if dups != 0 {
		t.Errorf("%d duplicate deliveries: nothing was in flight at the stop", dups)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}

func topicSeries(name, topic string) string {
	return fmt.Sprintf("%s{topic=%q}", name, topic)
}

// readMetrics reads GET /metrics of a pushd: series (name with labels, as printed) → value.
func readMetrics(t *testing.T, base string) map[string]float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("cannot read /metrics: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("/metrics: status %d %s", res.StatusCode, b)
	}
	out := make(map[string]float64)
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("cannot read /metrics: %v", err)
	}
	return out
}
