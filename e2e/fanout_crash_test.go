package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// Issue 12: pushd killed (SIGKILL, by its own fault point) between any two durable writes of the
// fan-out path loses no target. Each case arms one point of fanout/faultpoints.go, pushes to
// 2,000 iOS installations, lets the point kill pushd, restarts it on the same data without the
// point, and reads the simulator's per-token ledger: every token reached at least once, no
// stranger, duplicates at most the batches per task in flight (--fanout-send-ahead; the default
// checkpoint after every batch) plus, where a task's per-batch writes are synced only every
// --fanout-sync-every deliveries, those (the kill can land before the log handed the
// unsynced ones to the OS), and the record's counts exact. Most cases sync every write, so
// that each point lies between two durable writes.
func TestE2EFanoutCrashAtFaultPoints(t *testing.T) {
	const (
		n           = 2000
		batch       = 50 // --fanout-batch-size
		concurrency = 4  // --fanout-concurrency
		sendAhead   = 2  // --fanout-send-ahead: batches per task at the gateway at once
	)
	args := []string{
		"--roles", "api,fanout,scheduler",
		"--fanout-batch-size", strconv.Itoa(batch),
		"--fanout-concurrency", strconv.Itoa(concurrency),
		"--fanout-send-ahead", strconv.Itoa(sendAhead),
		// 256 buckets / 32 = 8 tasks of ~250 targets (5 batches each): tasks in flight and
		// tasks waiting at every point.
		"--fanout-buckets-per-task", "32",
		// Cut by buckets however few the rows (2,000 would be one task by their count).
		"--fanout-min-task-rows", "0",
	}
	for _, c := range []struct {
		point     string
		at        int // the hit that kills
		syncEvery int // --fanout-sync-every
	}{
		{"fanout/planner-after-record", 1, 0},
		{"fanout/planner-after-tasks", 1, 0},
		{"fanout/worker-after-reserve", 6, 0},
		{"fanout/worker-after-send", 7, 0},
		{"fanout/worker-after-checkpoint", 6, 0},
		{"fanout/worker-after-final-progress", 3, 0},
		{"fanout/worker-after-complete", 3, 0},
		{"fanout/worker-after-complete", 8, 0}, // the last task: the record is done, its offset not committed
		// Reservations and checkpoints written without an fsync, synced every 2 batches.
		{"fanout/worker-after-reserve", 6, 2 * batch},
		{"fanout/worker-after-checkpoint", 6, 2 * batch},
		{"fanout/worker-after-checkpoint", 7, 2 * batch},
	} {
		name := c.point[len("fanout/"):] + "@" + strconv.Itoa(c.at)
		if c.syncEvery > 0 {
			name += "/sync-every-" + strconv.Itoa(c.syncEvery)
		}
		t.Run(name, func(t *testing.T) {
			s := startPushsim(t, "-latency", "1ms")
			data := t.TempDir()
			cl, tokens := prepareData(t, data, s, push.DefaultSettings(), n, "crash")
			all := append([]string{"--apns-endpoint", s.apnsURL, "--gateway-ca", filepath.Join(s.dir, "ca.pem"),
				"--fanout-sync-every", strconv.Itoa(c.syncEvery)}, args...)

			var before int64
			body := map[string]any{"data": map[string]any{"alert": "e2e crash"}, "channels": []string{"crash"}, "req_id": "crash1"}
			oid, p := pushKilledAt(t, cl, data, c.point, c.at, all, body, func() { before = s.stats.mustGet(t, false).Accepted })
			rec := cl.waitDone(t, oid)
			st := s.stats.mustGet(t, true)
			short, dups, strangers := deliveries(st.PerToken, tokens, 1)
			bound := int64(concurrency * (batch*sendAhead + c.syncEvery))
			t.Logf("killed at %s@%d with %d accepted; after the restart %d accepted, %d duplicates (bound %d)",
				c.point, c.at, before, st.Accepted, dups, bound)
			if len(short) > 0 {
				t.Errorf("%d of %d tokens never reached the simulator (first %s)", len(short), n, short[0])
			}
			if len(strangers) > 0 {
				t.Errorf("%d tokens that are not targets reached the simulator", len(strangers))
			}
			if dups > bound {
				t.Errorf("%d duplicates after one kill: more than %d (%d batches of %d, and %d unsynced, × %d tasks in flight)", dups, bound, sendAhead, batch, c.syncEvery, concurrency)
			}
			if rec.Devices != n || rec.Successes != n || rec.IOSSuccesses != n || rec.Failures != 0 || rec.Expired != 0 || rec.InvalidTokens != 0 {
				t.Errorf("record counts not exact: %+v, want devices = successes = iosSuccesses = %d, no failures", rec, n)
			}
			if rec.Tasks != 8 || rec.TasksDone != 8 {
				t.Errorf("record tasks %d, done %d: want 8 and 8", rec.Tasks, rec.TasksDone)
			}
			if err := p.stop(stopTimeout); err != nil {
				t.Errorf("pushd exit after SIGTERM: %v", err)
			}
		})
	}
}

// pushKilledAt starts pushd on data armed to kill itself (SIGKILL) at the fault point point@at,
// pushes body, waits for the kill, calls afterKill (when not nil), and starts pushd again on the
// same data without the point. A push whose answer the kill cut off is sent again: body's
// req_id makes it the same push. It returns the push's objectId and the running pushd.
func pushKilledAt(t *testing.T, cl *client, data, point string, at int, args []string, body map[string]any, afterKill func()) (string, *pushd) {
	t.Helper()
	t.Setenv(faultpoint.Env, point+"@"+strconv.Itoa(at))
	p := startPushd(t, data, args...)
	cl.base = p.base
	oid, _ := tryPush(cl, body)
	p.waitOutput(regexp.MustCompile(`faultpoint `+regexp.QuoteMeta(point)+` reached`), pushTimeout)
	p.kill() // already dead: waits for the exit
	if afterKill != nil {
		afterKill()
	}
	t.Setenv(faultpoint.Env, "")
	p = startPushd(t, data, args...)
	cl.base = p.base
	if oid == "" {
		var err error
		if oid, err = tryPush(cl, body); err != nil {
			t.Fatalf("push retried after the restart: %v", err)
		}
	}
	return oid, p
}

// tryPush sends POST /1.1/push with the master key and returns the record's objectId, or why
// there is none.
func tryPush(c *client, body any) (string, error) {
	status, b, err := c.call("POST", "/1.1/push", true, body)
	if err != nil {
		return "", err
	}
	var r struct {
		ObjectID string `json:"objectId"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &r) != nil || r.ObjectID == "" {
		return "", fmt.Errorf("push: status %d %s", status, b)
	}
	return r.ObjectID, nil
}

// A kill between a batch's send and its checkpoint re-sends the batch after the restart. Its
// dead tokens must be found again then, so that the record counts them: an installation
// deleted for its dead token before the checkpoint that counts it is not scanned again, and the
// record came out short of it in invalidTokens and devices (docs/decisions.md, "Counts").
// Fan-out deletes them once the checkpoint (or the task's completion) is durable.
func TestE2EFanoutCrashCountsDeadTokens(t *testing.T) {
	const (
		n         = 2000
		batch     = 50
		deadRate  = 0.05
		simSeed   = 7
		sendAhead = 2
	)
	args := []string{
		"--roles", "api,fanout,scheduler",
		"--fanout-batch-size", strconv.Itoa(batch),
		"--fanout-concurrency", "4",
		"--fanout-send-ahead", strconv.Itoa(sendAhead),
		"--fanout-buckets-per-task", "32",
		"--fanout-min-task-rows", "0",
	}
	for _, c := range []struct {
		point string
		at    int
	}{
		{"fanout/worker-after-send", 7},
		{"fanout/worker-after-checkpoint", 6},
		{"fanout/worker-after-final-progress", 3}, // a task's last dead tokens go after it
	} {
		t.Run(c.point[len("fanout/"):]+"@"+strconv.Itoa(c.at), func(t *testing.T) {
			s := startPushsim(t, "-latency", "1ms", "-invalid-token-rate", strconv.FormatFloat(deadRate, 'f', -1, 64), "-seed", strconv.Itoa(simSeed))
			data := t.TempDir()
			cl, tokens := prepareData(t, data, s, push.DefaultSettings(), n, "dead")
			var live []string
			for _, tok := range tokens {
				if !sim.IsDeadToken(tok, deadRate, simSeed) {
					live = append(live, tok)
				}
			}
			dead := int64(n - len(live))
			if dead == 0 {
				t.Fatal("no dead token among the targets: the test proves nothing")
			}
			all := append([]string{"--apns-endpoint", s.apnsURL, "--gateway-ca", filepath.Join(s.dir, "ca.pem")}, args...)

			body := map[string]any{"data": map[string]any{"alert": "e2e dead"}, "channels": []string{"dead"}, "req_id": "dead1"}
			oid, p := pushKilledAt(t, cl, data, c.point, c.at, all, body, nil)
			rec := cl.waitDone(t, oid)
			st := s.stats.mustGet(t, true)
			short, _, strangers := deliveries(st.PerToken, live, 1)
			if len(short) > 0 || len(strangers) > 0 {
				t.Errorf("%d live tokens never reached, %d accepted tokens not live targets", len(short), len(strangers))
			}
			if rec.Devices != n || rec.InvalidTokens != dead || rec.Successes != n-dead || rec.Failures != 0 {
				t.Errorf("record counts not exact: devices %d, invalidTokens %d, successes %d, failures %d; want %d, %d, %d, 0",
					rec.Devices, rec.InvalidTokens, rec.Successes, rec.Failures, n, dead, n-dead)
			}
			// The kill may land between another task's checkpoint and its deletions: those
			// dead installations stay, and the next push finds them dead and deletes them.
			left := countInstallations(t, cl)
			if left < n-dead || left > n {
				t.Errorf("%d installations left: want between %d and %d", left, n-dead, n)
			}
			again := cl.waitDone(t, cl.push(t, map[string]any{"data": map[string]any{"alert": "e2e dead again"}, "channels": []string{"dead"}}))
			if again.Devices != left || again.InvalidTokens != left-(n-dead) {
				t.Errorf("the next push counted devices %d, invalidTokens %d; want %d and %d", again.Devices, again.InvalidTokens, left, left-(n-dead))
			}
			if after := countInstallations(t, cl); after != n-dead {
				t.Errorf("%d installations left after the next push, want %d: the dead ones deleted, the live ones kept", after, n-dead)
			}
			t.Logf("killed at %s@%d: %d dead of %d, %d installations left after the restart", c.point, c.at, dead, n, left)
			if err := p.stop(stopTimeout); err != nil {
				t.Errorf("pushd exit after SIGTERM: %v", err)
			}
		})
	}
}

// countInstallations is the app's installation count (GET /1.1/installations?count=1).
func countInstallations(t *testing.T, c *client) int64 {
	t.Helper()
	status, b, err := c.call("GET", "/1.1/installations?count=1&limit=0", true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("count installations: status %d %s: %v", status, b, err)
	}
	var r struct {
		Count *int64 `json:"count"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Count == nil {
		t.Fatalf("count answer %s: %v", b, err)
	}
	return *r.Count
}
