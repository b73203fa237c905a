package e2e

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
)

// A channel push to 20,000 iOS installations survives two SIGKILLs of pushd mid-push (issue 4,
// item 6): after each restart on the same data directory the push resumes from its tasks'
// checkpoints, every token reaches the simulator at least once, the duplicates stay within the
// batches per task in flight (--fanout-send-ahead) and the deliveries since its last synced
// checkpoint (--fanout-sync-every) per kill, and the record's counts are exact.
//
// The simulator runs as its own process so that its per-token counts outlive pushd. It paces
// answers (-rate) so that the push lasts a few seconds and the kills land mid-push.
func TestE2EKillMidPushLosesNoTarget(t *testing.T) {
	const (
		n           = 20_000
		batch       = 100 // --fanout-batch-size; the default checkpoint interval is one batch
		concurrency = 4   // --fanout-concurrency: tasks in flight per process
		sendAhead   = 2   // --fanout-send-ahead: batches per task at the gateway at once
		// --fanout-sync-every: the checkpoints between are not fsynced, and a kill while
		// Pebble's log is in an fsync loses those it has not handed to the OS yet.
		syncEvery = 2 * batch
		kills     = 2
		simRate   = 4000 // accepted pushes/s: the push takes ~5 s
	)
	begin := time.Now()
	s := startPushsim(t, "-latency", "2ms", "-rate", strconv.Itoa(simRate))
	data := t.TempDir()
	c, tokens := prepareData(t, data, s, push.DefaultSettings(), n, "kill")
	args := []string{
		"--roles", "api,fanout,scheduler",
		"--apns-endpoint", s.apnsURL,
		"--gateway-ca", filepath.Join(s.dir, "ca.pem"),
		"--fanout-concurrency", strconv.Itoa(concurrency),
		"--fanout-batch-size", strconv.Itoa(batch),
		"--fanout-send-ahead", strconv.Itoa(sendAhead),
		"--fanout-sync-every", strconv.Itoa(syncEvery),
		// 256 buckets / 32 = 8 tasks of ~2,500 targets: several checkpoints per task, and
		// tasks both in flight and not yet started at each kill.
		"--fanout-buckets-per-task", "32",
	}
	p := startPushd(t, data, args...)
	c.base = p.base
	oid := c.push(t, map[string]any{"data": map[string]any{"alert": "e2e kill"}, "channels": []string{"kill"}})
	t.Logf("seeded %d installations and pushed in %s", n, time.Since(begin).Round(time.Millisecond))

	killed := 0
	for k := 1; k <= kills; k++ {
		// Kill once the simulator has accepted k/(kills+2) of the audience: 25%, then 50%.
		threshold := int64(n) * int64(k) / int64(kills+2)
		waitfor.True(t, pushTimeout, "the simulator to accept "+strconv.FormatInt(threshold, 10)+" pushes", func() bool {
			return s.stats.mustGet(t, false).Accepted >= threshold
		})
		p.kill()
		after := s.stats.mustGet(t, false).Accepted
		midPush := after < n // fewer accepted than targets, duplicates included: some target was not reached yet
		t.Logf("kill %d: SIGKILL with %d pushes accepted (mid-push: %v)", k, after, midPush)
		if !midPush && k == 1 {
			t.Fatalf("the push finished before the first kill (%d accepted): slow the simulator down", after)
		}
		killed++
		p = startPushd(t, data, args...)
		c.base = p.base
		if !midPush {
			break
		}
	}

	rec := c.waitDone(t, oid)
	st := s.stats.mustGet(t, true)
	short, dups, strangers := deliveries(st.PerToken, tokens, 1)
	bound := int64(killed * (batch*sendAhead + syncEvery) * concurrency)
	t.Logf("done after %d kills in %s: %d accepted, %d duplicates (bound %d), by status %v, tasks %d",
		killed, time.Since(begin).Round(time.Millisecond), st.Accepted, dups, bound, st.ByStatus, rec.Tasks)
	if len(short) > 0 {
		t.Errorf("%d of %d tokens never reached the simulator (first %s)", len(short), n, short[0])
	}
	if len(strangers) > 0 {
		t.Errorf("%d tokens that are not targets reached the simulator", len(strangers))
	}
	if dups > bound {
		t.Errorf("%d duplicates after %d kills: more than %d ((%d batches of %d + %d unsynced) × %d tasks in flight × kills)",
			dups, killed, bound, sendAhead, batch, syncEvery, concurrency)
	}
	if st.Accepted != int64(n)+dups {
		t.Errorf("simulator accepted %d, per-token counts sum to %d", st.Accepted, int64(n)+dups)
	}
	if rec.Devices != n || rec.Successes != n || rec.IOSSuccesses != n || rec.Failures != 0 || rec.Expired != 0 || rec.InvalidTokens != 0 {
		t.Errorf("record counts not exact: %+v, want devices = successes = iosSuccesses = %d, no failures", rec, n)
	}
	if rec.TasksDone != rec.Tasks || rec.Tasks != 8 {
		t.Errorf("record tasks %d, done %d: want 8 and 8", rec.Tasks, rec.TasksDone)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
